// Everything a pcr user needs: datasets and tables, the loaders, decoding,
// conversion and verification.
#pragma once

#include "pcr/bytes.h"
#include "pcr/convert.h"
#include "pcr/decode.h"
#include "pcr/decode_iterator.h"
#include "pcr/image_dataset.h"
#include "pcr/image_loader.h"
#include "pcr/io.h"
#include "pcr/record_iterator.h"
#include "pcr/sample_iterator.h"
#include "pcr/status.h"
#include "pcr/table.h"
#include "pcr/table_loader.h"
#include "pcr/transform.h"
#include "pcr/types.h"
#include "pcr/verify.h"
#include "pcr/version.h"
