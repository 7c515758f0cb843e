// Profile `generic`: remat's reference implementation (flash attention, fused
// SwiGLU, an fp32 copy of the logits in the loss), the choices a tuned stack
// such as Megatron-LM with Transformer Engine makes. The TrainingSpec defaults
// are this profile; implementation flags given on the command line stay.
#include "remat/spec/framework.hpp"

namespace remat {

const FrameworkProfile& framework_profile_generic() {
  static const FrameworkProfile p{
      .name = kGenericFramework,
      .summary = "remat's reference: flash attention, fused kernels (the flags --swiglu-unfused ... apply)",
      .read_from = "EAGLE paper Appendix C; Megatron-LM with Transformer Engine",
      .default_zero_stage = -1,
      .strategies = {Strategy::none, Strategy::full, Strategy::selective, Strategy::standard, Strategy::eagle,
                     Strategy::offload, Strategy::streambp},
      .replay_choosable = true,
      .apply_training = nullptr,
      .apply_hardware = nullptr,
      .time_gaps = nullptr,
  };
  return p;
}

}  // namespace remat
