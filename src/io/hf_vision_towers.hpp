// The vision towers beside a multimodal config's language model that remat counts, by family
// (hf_vision_towers.cpp: SigLIP, CLIP, Pixtral, SigLIP2; hf_vision_towers_qwen.cpp: the Qwen vision
// family; hf_vision_towers_kimi_minicpm.cpp: Kimi-K2.5's MoonViT, MiniCPM-V 4.6's;
// hf_towers_glm4v_voxtral.cpp: GLM-4.1V/4.5V's, and Voxtral's audio tower). Each reads vision_config
// (audio_config) with its transformers class's defaults where the file leaves a key out; a key of
// the wrong type is a problem named by its key; 0 where a dimension is out of any tower's range
// (the tower is then not counted).
#pragma once
#include <initializer_list>
#include <string>
#include <vector>

#include "hf_json_reader.hpp"
#include "remat/spec/model_spec.hpp"

namespace remat {

// Every dimension a whole number in [1, 1e6]: else the tower is left uncounted, never miscounted.
bool plausible_tower_dims(std::initializer_list<double> dims);

// Whether outer_type is one of the Qwen vision family's wrappers (qwen2_vl, qwen2_5_vl, exaone4_5,
// qwen3_vl, qwen3_vl_moe, qwen3_5, qwen3_5_moe).
bool is_qwen_vision_wrapper(const std::string& outer_type);
// Their tower (model.visual): patch embedding, blocks, merger and Qwen3-VL's deepstack mergers.
double qwen_vision_params(HfJsonReader& v, const std::string& outer_type, std::vector<TowerLinear>& linears);

// `n` SigLIP-style encoder layers' linear modules (self_attn.q/k/v/out_proj, mlp.fc1/fc2) at width h, MLP f.
void add_siglip_layer_linears(double h, double f, double n, std::vector<TowerLinear>& linears);

// Kimi-K2.5/K2.6's tower and projector (outer model_type kimi_k25), and MiniCPM-V 4.6's tower and
// merger (minicpmv4_6, its linear modules added to `linears`): `v` is vision_config, `top` the wrapper's
// config, text_hidden the language model's width.
double kimi_k25_vision_params(HfJsonReader& top, HfJsonReader& v, double text_hidden);
double minicpmv4_6_vision_params(HfJsonReader& top, HfJsonReader& v, double text_hidden,
                                 std::vector<TowerLinear>& linears);

// GLM-4.1V's and GLM-4.5V's tower with its merger (outer model_type glm4v, glm4v_moe; `v` is
// vision_config), and Voxtral's audio tower and projector (voxtral; `a` is audio_config, text_hidden
// the language model's width): hf_towers_glm4v_voxtral.cpp. Where counted, each tower's linear
// modules are added to `linears` (the adapters PEFT puts on them: ModelSpec::tower_linear_modules).
double glm4v_vision_params(HfJsonReader& v, std::vector<TowerLinear>& linears);
double voxtral_audio_params(HfJsonReader& a, double text_hidden, std::vector<TowerLinear>& linears);
// Qwen2-Audio's encoder and projector (qwen2_audio; `a` is audio_config): hf_towers_glm4v_voxtral.cpp.
double qwen2_audio_params(HfJsonReader& a, double text_hidden, std::vector<TowerLinear>& linears);

// transformers 5.17's AutoModelForCausalLM, which --framework hf stands for, builds Qwen3.5's and Llama
// 3.2 Vision's text-only classes (Qwen3_5ForCausalLM, Qwen3_5MoeForCausalLM: "VLM compatibility";
// MllamaForCausalLM) from a qwen3_5, qwen3_5_moe or mllama config: no tower is held. A counted tower goes
// to a note and idle_params to 0; the other wrappers' causal-LM class is the whole model.
// Qwen2-Audio's class computes its own loss (ModelSpec::logits).
void apply_wrapper_causal_lm(const std::string& outer_type, ModelSpec& m);
// Whether that class is the one AutoModelForCausalLM builds for outer_type (nothing beside the language model).
bool causal_lm_builds_no_tower(const std::string& outer_type);

// Gemma 4's vision and audio towers build their projections as Gemma4ClippableLinear, a module PEFT
// 0.21 refuses to adapt; they share the language model's names (the vision tower's q/k/v/o_proj and
// gate/up/down_proj, the audio tower's q/k/v_proj), so a target with one of those names raises.
void note_peft_refused_tower_modules(HfJsonReader& top, const std::string& outer_type, ModelSpec& m);

}  // namespace remat
