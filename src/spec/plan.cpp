#include "remat/spec/plan.hpp"

namespace remat {

const char* to_string(Strategy s) {
  switch (s) {
    case Strategy::none:
      return "none";
    case Strategy::full:
      return "full";
    case Strategy::selective:
      return "selective";
    case Strategy::standard:
      return "standard";
    case Strategy::eagle:
      return "eagle";
    case Strategy::offload:
      return "offload";
    case Strategy::streambp:
      return "streambp";
  }
  return "?";
}

const char* to_string(BlockMode m) {
  switch (m) {
    case BlockMode::keep:
      return "keep";
    case BlockMode::standard:
      return "standard";
    case BlockMode::eagle:
      return "eagle";
    case BlockMode::offload:
      return "offload";
  }
  return "?";
}

const char* to_string(LayerMode m) {
  switch (m) {
    case LayerMode::keep:
      return "keep";
    case LayerMode::full:
      return "full";
    case LayerMode::selective:
      return "selective";
    case LayerMode::blocks:
      return "blocks";
  }
  return "?";
}

bool parse_strategy(const std::string& text, Strategy& out) {
  for (Strategy s : {Strategy::none, Strategy::full, Strategy::selective, Strategy::standard, Strategy::eagle,
                     Strategy::offload, Strategy::streambp}) {
    if (text == to_string(s)) {
      out = s;
      return true;
    }
  }
  return false;
}

}  // namespace remat
