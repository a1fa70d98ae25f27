// Conversion: every conversion of pcr, in three headers.
#pragma once

#include "pcr/convert_images.h"  // IWYU pragma: export
#include "pcr/convert_table.h"   // IWYU pragma: export
#include "pcr/popularity.h"      // IWYU pragma: export
