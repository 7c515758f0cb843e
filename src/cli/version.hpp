#pragma once
// Version and commit stamped into every report (set by CMake; fallbacks for other builds).
#ifndef REMAT_VERSION
#define REMAT_VERSION "0.0.0"
#endif
#ifndef REMAT_GIT_COMMIT
#define REMAT_GIT_COMMIT "unknown"
#endif
