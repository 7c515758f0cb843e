// What a checkpoint's config.json says beside its layers: a quantized checkpoint, multi-token
// prediction modules, and the model's name where the file gives none.
#include <filesystem>
#include <string>

#include "hf_families.hpp"
#include "hf_json_reader.hpp"
#include "remat/spec/model_spec.hpp"

namespace remat {

// A quantized checkpoint (GPTQ, AWQ, bitsandbytes, FP8, ChatGLM's quantization_bit): remat
// costs its weights at the run's --precision, as training does after loading them so.
void note_quantized(HfJsonReader& top, HfJsonReader& r, ModelSpec& m) {
  for (HfJsonReader* reader : {&top, &r}) {
    std::string method;
    if (reader->has("quantization_config") && reader->object["quantization_config"].is_object()) {
      const auto& q = reader->object["quantization_config"];
      method = q.contains("quant_method") && q["quant_method"].is_string() ? q["quant_method"].get<std::string>()
                                                                           : "quantization_config";
    } else if (reader->has("quantization_bit")) {
      method = "quantization_bit " + reader->object["quantization_bit"].dump();
    }
    if (method.empty()) continue;
    m.notes.push_back("the checkpoint is quantized (" + method +
                      "): its weights are costed at the run's --precision (as after loading them to train), "
                      "not at the stored width");
    return;
  }
}

// MTP modules: DeepSeek-V2/V3's, GLM-4.5's and MiMo's (one layer of the model's own
// kind, a 2h x h projection and three norms each); noted and left out in other families.
void read_mtp(HfJsonReader& r, ModelSpec& m, const HfFamily& family) {
  int64_t mtp = 0;
  r.integer("num_nextn_predict_layers", mtp, false);
  if (mtp > 0 && !family.mtp) {  // ERNIE 4.5's Paddle configs: transformers builds no MTP for it either
    m.notes.push_back(r.path("num_nextn_predict_layers") + " = " + std::to_string(mtp) +
                      ": the multi-token prediction modules are not counted (remat does not know this family's "
                      "MTP layout, and transformers' model class does not build them)");
    return;
  }
  m.num_nextn_predict_layers = mtp;
  if (mtp > 0)
    m.notes.push_back(r.path("num_nextn_predict_layers") + " = " + std::to_string(mtp) +
                      ": the multi-token prediction modules are costed on the last stage (their layer, eh_proj and "
                      "LM head: weights, activations, logits, FLOPs; Megatron-LM's --mtp-num-layers) and counted "
                      "apart from the model's parameters (mtp_params), as transformers' model class builds none");
}

// A config.json without _name_or_path is named by its file ("deepseek-r1.json") or, for a
// file called config.json, by its folder (a Hub checkout "DeepSeek-R1/config.json"), with the
// model_type beside it: not by the model_type alone.
std::string name_from_file(const std::string& file, const std::string& model_type) {
  const std::filesystem::path path(file);
  std::string stem = path.stem().string();
  if (stem == "config" && path.has_parent_path()) stem = path.parent_path().filename().string();
  if (stem.empty() || stem == "config" || stem == "." || stem == model_type) return model_type;
  return stem + " (" + model_type + ")";
}

}  // namespace remat
