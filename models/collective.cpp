#include "models/collective.hpp"

namespace gpipe::models {

std::string_view to_string(Collective collective) {
  switch (collective) {
    case Collective::all_reduce: return "all-reduce";
    case Collective::all_gather: return "all-gather";
    case Collective::reduce_scatter: return "reduce-scatter";
  }
  return "?";
}

}  // namespace gpipe::models
