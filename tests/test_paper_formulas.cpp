// EAGLE Table 1 (all 15 cells, two dim sets) and Korthikanti et al. 2022 Table 2.
#include <gtest/gtest.h>

#include "remat/cost/korthikanti.hpp"
#include "remat/cost/paper_formulas.hpp"

namespace remat::paper {
namespace {

// Set A: b=2 s=8 (bs=16) h=16 h1=32 g=4 d=4 a=4 r=2 h_q=8 h_kv=6 (h~=16) K=2.
Dims set_a() {
  Dims x;
  x.b = 2, x.s = 8, x.h = 16, x.h1 = 32, x.g = 4, x.d = 4, x.a = 4, x.r = 2, x.h_q = 8, x.h_kv = 6, x.K = 2;
  return x;
}

// Set B: DeepSeek-V2-like, b=1 s=4096 h=5120 h1=1536 g=8 d=128 a=128 r=64 h_q=1536 h_kv=512 K=6.
Dims set_b() {
  Dims x;
  x.b = 1, x.s = 4096, x.h = 5120, x.h1 = 1536, x.g = 8, x.d = 128, x.a = 128, x.r = 64, x.h_q = 1536, x.h_kv = 512,
  x.K = 6;
  return x;
}

struct Expected {
  Module module;
  Method method;
  double memory, flops;
};

void check(const Dims& x, const std::vector<Expected>& rows) {
  for (const auto& e : rows) {
    const Cell c = table1(e.module, x, e.method);
    EXPECT_DOUBLE_EQ(c.memory_bytes, e.memory) << int(e.module) << "/" << int(e.method);
    EXPECT_DOUBLE_EQ(c.flops, e.flops) << int(e.module) << "/" << int(e.method);
  }
}

TEST(PaperTable1, AllFifteenCellsSetA) {
  check(set_a(), {
                     {Module::rmsnorm_linear, Method::none, 1024, 49152},     // 4*16*16; 6*16*16*32
                     {Module::rmsnorm_linear, Method::standard, 512, 65536},  // 2*16*16; 8*16*16*32
                     {Module::rmsnorm_linear, Method::eagle, 512, 49152},     // 2*16*16; 6*16*16*32
                     {Module::mlp, Method::none, 4096, 147456},               // 1024 + 6*16*32; 18*16*16*32
                     {Module::mlp, Method::standard, 512, 196608},            // 24*16*16*32
                     {Module::mlp, Method::eagle, 512, 180224},               // 22*16*16*32
                     {Module::moe, Method::none, 12288, 442368},              // 32*(32+96+64+192); 18*8192*3
                     {Module::moe, Method::standard, 1536, 589824},           // 2*16*16*3; 24*8192*3
                     {Module::moe, Method::eagle, 1536, 540672},              // 22*8192*3
                     {Module::gqa, Method::none, 3072, 122880},               // 2048+1024; 98304 + 12*16*8*16
                     {Module::gqa, Method::standard, 1024, 155648},           // 4*256; 30*4096 + 16*2048
                     {Module::gqa, Method::eagle, 1024, 147456},              // 30*4096 + 12*2048
                     {Module::mla, Method::none, 4096, 116736},               // 32*(32+16+64+16); 96*(256+384+576)
                     {Module::mla, Method::standard, 1536, 147456},  // 32*(16+16+16); 32*(1024+24*64+16*(48+32+48))
                     {Module::mla, Method::eagle, 1536, 129024},     // 32*(768+24*56+16*(48+24+48))
                 });
}

TEST(PaperTable1, AllFifteenCellsSetB) {
  check(set_b(), {
                     {Module::rmsnorm_linear, Method::none, 83886080, 193273528320},
                     {Module::rmsnorm_linear, Method::standard, 41943040, 257698037760},
                     {Module::rmsnorm_linear, Method::eagle, 41943040, 193273528320},
                     {Module::mlp, Method::none, 121634816, 579820584960},
                     {Module::mlp, Method::standard, 41943040, 773094113280},
                     {Module::mlp, Method::eagle, 41943040, 708669603840},
                     {Module::moe, Method::none, 423624704, 4058744094720},
                     {Module::moe, Method::standard, 293601280, 5411658792960},
                     {Module::moe, Method::eagle, 293601280, 4960687226880},
                     {Module::gqa, Method::none, 184549376, 3607772528640},
                     {Module::gqa, Method::standard, 83886080, 4595615006720},
                     {Module::gqa, Method::eagle, 83886080, 4252017623040},
                     {Module::mla, Method::none, 772276224, 7790533804032},
                     {Module::mla, Method::standard, 193462272, 9700183638016},
                     {Module::mla, Method::eagle, 193462272, 8237210402816},
                 });
}

TEST(PaperTable1, TextClaims) {
  const Dims x = set_b();
  // "25.00% FLOP reduction" for RMSNorm+Linear, "8.33%" for MLP and MoE (section 3.2)
  const auto cut = [&](Module m) {
    return 1 - table1(m, x, Method::eagle).flops / table1(m, x, Method::standard).flops;
  };
  EXPECT_NEAR(cut(Module::rmsnorm_linear), 0.25, 1e-12);
  EXPECT_NEAR(cut(Module::mlp), 1.0 / 12, 1e-12);
  EXPECT_NEAR(cut(Module::moe), 1.0 / 12, 1e-12);
  // "50.00% memory reduction" for RMSNorm+Linear
  EXPECT_DOUBLE_EQ(table1(Module::rmsnorm_linear, x, Method::eagle).memory_bytes * 2,
                   table1(Module::rmsnorm_linear, x, Method::none).memory_bytes);
}

}  // namespace
}  // namespace remat::paper

namespace remat::korthikanti {
namespace {

// GPT-3 175B row of the paper: s=2048, b=1, h=12288, a=96, t=8. 5as/h = 80.
TEST(KorthikantiTable2, FiveRows) {
  const Dims x{2048, 1, 12288, 96, 8};
  const double sbh = 2048.0 * 12288;                             // 25,165,824
  EXPECT_DOUBLE_EQ(no_parallelism(x), sbh * 114);                // 34 + 80
  EXPECT_DOUBLE_EQ(tensor_parallel(x), sbh * (10 + 3 + 10));     // 10 + 24/8 + 80/8
  EXPECT_DOUBLE_EQ(tensor_sequence_parallel(x), sbh * 114 / 8);  // (34 + 80)/8
  EXPECT_DOUBLE_EQ(selective_tensor_sequence(x), sbh * 34 / 8);
  EXPECT_DOUBLE_EQ(full_recompute(x), sbh * 2);
  EXPECT_DOUBLE_EQ(no_parallelism(x), 2868903936.0);
}

}  // namespace
}  // namespace remat::korthikanti
