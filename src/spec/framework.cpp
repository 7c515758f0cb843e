#include "remat/spec/framework.hpp"

#include <algorithm>

namespace remat {

// Defined by the build from the files in src/spec/profiles/ (src/CMakeLists.txt).
std::vector<const FrameworkProfile*> registered_framework_profiles();

const std::vector<const FrameworkProfile*>& framework_profiles() {
  static const std::vector<const FrameworkProfile*> sorted = [] {
    auto all = registered_framework_profiles();
    std::sort(all.begin(), all.end(),
              [](const FrameworkProfile* a, const FrameworkProfile* b) { return std::string_view(a->name) < b->name; });
    return all;
  }();
  return sorted;
}

const FrameworkProfile* find_framework(std::string_view name) {
  for (const FrameworkProfile* p : framework_profiles())
    if (name == p->name) return p;
  return nullptr;
}

std::string sdpa_refusal(std::string_view name, const ModelSpec& m) {
  const FrameworkProfile* profile = find_framework(name);
  if (!profile || !profile->runs_model_code || !m.eager_attention_only) return "";
  return "is not how " + std::string(profile->name) +
         " runs this model: its transformers class has no sdpa path (_supports_sdpa is False); give --attention eager";
}

std::string framework_names() {
  std::string out;
  for (const FrameworkProfile* p : framework_profiles()) out += (out.empty() ? "" : ", ") + std::string(p->name);
  return out;
}

bool framework_runs(const FrameworkProfile& profile, Strategy s) {
  return std::find(profile.strategies.begin(), profile.strategies.end(), s) != profile.strategies.end();
}

namespace {

const FrameworkProfile& profile_named(std::string_view name) {
  const FrameworkProfile* p = find_framework(name);
  return p ? *p : *find_framework(kGenericFramework);
}

}  // namespace

TrainingSpec apply_framework(TrainingSpec t, std::string_view name) {
  const FrameworkProfile& p = profile_named(name);
  t.framework = p.name;
  t.mixer_kernels = p.mixer_kernels;
  return p.apply_training ? p.apply_training(std::move(t)) : t;
}

HardwareSpec apply_framework(HardwareSpec hw, std::string_view name) {
  const FrameworkProfile& p = profile_named(name);
  return p.apply_hardware ? p.apply_hardware(std::move(hw)) : hw;
}

ModelSpec model_as_built(ModelSpec m, std::string_view name) {
  const FrameworkProfile& p = profile_named(name);
  if (p.builds_mtp_modules || m.num_nextn_predict_layers == 0) return m;
  m.notes.push_back("--framework " + std::string(p.name) + " builds no multi-token prediction modules: the model's " +
                    std::to_string(m.num_nextn_predict_layers) + " are left out of its memory and time");
  m.num_nextn_predict_layers = 0;
  return m;
}

std::vector<std::string> framework_time_gaps(const HardwareSpec& hw, std::string_view name, const ModelSpec& model,
                                             const TrainingSpec& training) {
  const FrameworkProfile& p = profile_named(name);
  return p.time_gaps ? p.time_gaps(hw, model, training) : std::vector<std::string>{};
}

}  // namespace remat
