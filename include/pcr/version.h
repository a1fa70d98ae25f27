// The library's version; meson.build refuses to build when project()'s
// version differs.
#pragma once

#define PCR_VERSION_MAJOR 0
#define PCR_VERSION_MINOR 8
#define PCR_VERSION_PATCH 0
#define PCR_VERSION_STRING "0.8.0"
