// Multimodal configs: which part is the language model (a nested text_config, llm_config or
// llm_cfg; MiniCPM-V's keys at the top by its version) and the notes naming what is not counted.
#include <nlohmann/json.hpp>

#include <string>

#include "hf_families.hpp"
#include "hf_json_reader.hpp"
#include "hf_vision_towers.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/problems.hpp"

namespace remat {

using nlohmann::json;

// The language model of a multimodal wrapper: text_config (transformers), llm_config (InternVL's
// remote code) or llm_cfg (VILA's); nullptr when the config is the language model itself.
std::string nested_key(const json& root, const std::string& type) {
  // Qwen3-ASR as released (the qwen-asr package's layout): the language model in the thinker's
  // text_config. transformers 5.17's Qwen3ASRConfig reads a top-level text_config only, so it builds
  // its default language model from such a file (Qwen3-ASR-0.6B: hidden 2048 for the file's 1024).
  if (type == "qwen3_asr" && root.contains("thinker_config") && root["thinker_config"].is_object() &&
      root["thinker_config"].contains("text_config") && root["thinker_config"]["text_config"].is_object())
    return "thinker_config.text_config";
  const HfFamily* family = find_hf_family(type);
  // Qwen2-VL's newer re-saves keep the language model only in text_config
  const bool flat_moved = family && family->vision_tower_beside && !root.contains("hidden_size");
  for (const char* key : {"text_config", "llm_config", "llm_cfg", "language_config"})
    if (root.contains(key) && root[key].is_object() &&
        (is_hf_text_config_wrapper(type) || flat_moved || (!family && root[key].contains("model_type"))))
      return key;
  return "";
}

const json& nested_object(const json& root, const std::string& path) {
  const size_t dot = path.find('.');
  if (dot == std::string::npos) return root[path];
  return nested_object(root[path.substr(0, dot)], path.substr(dot + 1));
}

// MiniCPM-V's remote code builds its language model by the config's version, its keys at the top
// level (vLLM's minicpmv.py dispatch, _SUPPORT_VERSION): 2.0 MiniCPM, 2.5 and 4.0 LLaMA, 2.6 Qwen2,
// 4.5 Qwen3; without a version, 2.0 where hidden_size is 2304 and query_num 64, else 2.5. "" for
// another model_type.
std::string minicpmv_text_model_type(const json& root, const std::string& type, const std::string& file) {
  if (type != "minicpmv") return "";
  std::string version = root.contains("version") ? root["version"].dump() : "";
  if (version.empty() || root["version"].is_null()) {
    const bool v2 = root.value("hidden_size", json()) == 2304 && root.value("query_num", json()) == 64;
    version = v2 ? "2.0" : "2.5";
  }
  if (version.size() > 2 && version.front() == '"') version = version.substr(1, version.size() - 2);
  const std::pair<const char*, const char*> kVersions[] = {{"2.0", "minicpm"}, {"2", "minicpm"}, {"2.5", "llama"},
                                                           {"2.6", "qwen2"},   {"4.0", "llama"}, {"4", "llama"},
                                                           {"4.5", "qwen3"}};
  for (const auto& [v, family] : kVersions)
    if (version == v) return family;
  throw InputError({{file, "version", version,
                     "is not a model remat can build: MiniCPM-V of a version whose language model remat does not "
                     "know (2.0, 2.5, 2.6, 4.0, 4.5)"}});
}

// A flat config's encoders beside its language model (GLM-4V's and Qwen-VL's remote code keep the
// vision tower's config next to the language model's keys), named in a note and not read; where
// transformers builds a tower all the same (GLM-4.1V's from vision_config, LLaVA's original file its
// default), the note gives the parameters held.
void note_flat_encoders(HfJsonReader& top, ModelSpec& m) {
  std::string keys;
  for (const char* key : {"vision_config", "visual", "vision_tower_cfg", "mm_vision_tower", "vision_tower",
                          "siglip_config", "audio_config", "mm_projector_cfg"})
    if (top.object.contains(key) && !top.object[key].is_null()) {
      keys += (keys.empty() ? "" : ", ") + std::string(key);
      top.mark_read(key);
    }
  const std::string held = std::to_string(int64_t(m.idle_params));
  const bool from_vision_config = top.object.contains("vision_config") && top.object["vision_config"].is_object();
  if (m.idle_params > 0 && from_vision_config)
    m.notes.push_back(
        "the language model's keys at the top are read; the vision tower and projector transformers "
        "builds from vision_config (" +
        held + " parameters) are not in its count; under --framework hf their weights are held, never run");
  else if (m.idle_params > 0)
    m.notes.push_back("the language model's keys at the top are read; " +
                      (keys.empty() ? std::string() : "in place of the encoders they name (" + keys + ") ") +
                      "transformers builds its default vision tower and projector, whose weights are held (" + held +
                      " parameters)");
  else if (!keys.empty()) {
    m.encoders_uncounted = true;
    m.notes.push_back("the language model's keys at the top are read; the encoders and projectors beside it (" + keys +
                      ") are not counted");
  }
}

// Mistral3Config declares tie_word_embeddings = True (transformers 5.17): Magistral Small 2509's file,
// which states it nowhere, builds a tied head (probes/cut_counts.py: 671,088,640 parameters fewer than
// an untied head, at every cut)
bool wrapper_ties_head(const std::string& outer_type, bool language_model_ties) {
  return outer_type == "mistral3" || language_model_ties;
}

void note_minicpmv_language_model(const std::string& minicpmv_type, ModelSpec& m) {
  m.encoders_uncounted = true;
  m.notes.push_back("model_type minicpmv: the language model's keys at the top are read as " + minicpmv_type +
                    ", the model its remote code builds for the config's version; the vision tower and "
                    "resampler are not counted");
}

namespace {

// What a wrapper builds beside its language model, by the encoder configs its file gives: an audio
// tower and projector where it gives audio_config alone (Voxtral), both towers where it gives both
// (Gemma 3n, Gemma 4 E2B: neither counted), else a vision tower and projector.
std::string encoders(const json& root) {
  const auto given = [&](const char* key) { return root.contains(key) && root[key].is_object(); };
  if (given("audio_config") && given("vision_config")) return "the vision and audio towers and projectors";
  return given("audio_config") ? "the audio tower and projector" : "the vision tower and projector";
}

}  // namespace

void note_vision_tower(ModelSpec& m, const HfFamily& family, const std::string& type, const std::string& nest,
                       const json& root) {
  // a wrapper whose causal-LM class is its language model alone builds nothing beside it to count
  const bool no_tower = root.contains("model_type") && root["model_type"].is_string() &&
                        causal_lm_builds_no_tower(root["model_type"].get<std::string>());
  m.encoders_uncounted = m.encoders_uncounted || (!nest.empty() && m.idle_params <= 0 && !no_tower);
  if (nest == "thinker_config.text_config") {
    m.name += " (language model: " + nest + ")";
    m.notes.push_back("the thinker's text_config is the language model (" + type +
                      "); the audio encoder is not counted. transformers 5.17's Qwen3ASRConfig reads a top-level "
                      "text_config only and builds its default language model from this file");
  } else if (!nest.empty() && m.idle_params > 0) {
    m.name += " (language model: " + nest + ")";
    m.notes.push_back("the nested config is the language model (" + type + "); " + encoders(root) + " (" +
                      std::to_string(int64_t(m.idle_params)) +
                      " parameters) are not in its count; under --framework hf their weights are held, never run");
  } else if (!nest.empty()) {
    m.name += " (language model: " + nest + ")";
    m.notes.push_back("the nested config is the language model (" + type + "); " + encoders(root) +
                      (no_tower ? " are not built by its causal-LM class" : " are not counted"));
  } else if (family.vision_tower_beside && m.idle_params > 0) {
    m.notes.push_back("the language model's keys are read (" + type + "); the vision tower and merger (" +
                      std::to_string(int64_t(m.idle_params)) +
                      " parameters) are not in its count; under --framework hf their weights are held, never run");
  } else if (family.vision_tower_beside) {
    m.notes.push_back("the language model's keys are read (" + type +
                      "); the vision tower (vision_config) is not counted");
  }
}

}  // namespace remat
