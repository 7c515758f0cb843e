#pragma once
// What each layer does with its activations between forward and backward.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace remat {

enum class Strategy { none, full, selective, standard, eagle, offload, streambp };

// Per recompute block: keep its activations, recompute them (standard replay
// or eagle), or offload them to host memory.
enum class BlockMode { keep, standard, eagle, offload };

// Per layer: full and selective act on the whole layer; `blocks` gives a mode
// per recompute block (Appendix C granularity).
enum class LayerMode { keep, full, selective, blocks };

struct LayerChoice {
  LayerMode mode = LayerMode::keep;
  std::vector<BlockMode> blocks;  // one per recompute block of the layer when mode == blocks
  int64_t stream_chunks = 0;      // mode == full only: > 0 reruns the layer in this many sequence chunks (StreamBP)
};

struct Plan {
  Strategy strategy = Strategy::none;
  std::vector<int64_t> recompute_layers;           // R per stage; one value applies to all stages; empty: all layers
  std::vector<int64_t> offload_layers;             // per stage, layers after the recomputed ones; empty: none
  std::map<int64_t, LayerChoice> layer_overrides;  // global layer index -> choice, wins over the above
};

const char* to_string(Strategy s);
const char* to_string(BlockMode m);
const char* to_string(LayerMode m);
bool parse_strategy(const std::string& text, Strategy& out);

}  // namespace remat
