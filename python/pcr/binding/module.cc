// The pcr Python extension (pcr._pcr): datasets, tables, decoding and
// conversion over the public C++ API, each area in a file of its own.
#include "common.h"

PYBIND11_MODULE(_pcr, m) {
  m.doc() = "pcr: Progressive Compressed Records and feature-flattened tables";
  m.attr("__version__") = PCR_VERSION_STRING;
  pcr_python::InitErrors();
  pcr_python::DefineDatasets(m);
  pcr_python::DefineDecoding(m);
  pcr_python::DefineTables(m);
  pcr_python::DefineLoaders(m);
  pcr_python::DefineConversions(m);
}
