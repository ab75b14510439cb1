#include "schedules/analytic_bubble.hpp"

#include <algorithm>

namespace gpipe::schedules {
namespace {

enum class Form { pipeline, interleaved, zb_h1, zb_h1_per_stage, none };

Form form_of(std::string_view family) {
  if (family == "gpipe" || family == "1f1b") return Form::pipeline;
  if (family == "interleaved-1f1b" || family == "looped-bfs") return Form::interleaved;
  if (family == "zb-h1") return Form::zb_h1;
  if (family == "interleaved-zb" || family == "dualpipev") return Form::zb_h1_per_stage;
  return Form::none;
}

// Integer numerator and denominator divided once, so that (K-1)/(M+K-1)
// comes out bit for bit as the closed form.
AnalyticBubble from_ratio(double numerator, double denominator) {
  if (denominator <= 0) return {};
  return {numerator / denominator, numerator / (numerator + denominator)};
}

}  // namespace

std::optional<AnalyticBubble> analytic_bubble(std::string_view family, int num_ranks, int stages_per_rank,
                                              int num_microbatches, const MeanComputeTimes& t) {
  if (num_ranks < 1 || num_microbatches < 1) return std::nullopt;
  const double k_minus_1 = num_ranks - 1;
  const double m = num_microbatches;
  const double total = t.forward + t.backward;
  const double input = t.backward - t.weight;
  switch (form_of(family)) {
    case Form::pipeline:
      return from_ratio(k_minus_1, m);
    case Form::interleaved:
      return from_ratio(k_minus_1, std::max(stages_per_rank, 1) * m);
    case Form::zb_h1:
      if (total <= 0) return std::nullopt;
      return from_ratio(std::max(0.0, k_minus_1 * (t.forward + input - t.weight)), m * total);
    case Form::zb_h1_per_stage:
      if (total <= 0) return std::nullopt;
      return from_ratio(std::max(0.0, k_minus_1 * (t.forward + input - t.weight)),
                        std::max(stages_per_rank, 1) * m * total);
    case Form::none:
      break;
  }
  return std::nullopt;
}

AnalyticForms analytic_bubble_forms(std::string_view family) {
  switch (form_of(family)) {
    case Form::pipeline: return {"(K-1)/(M+K-1)", "(K-1)/M"};
    case Form::interleaved: return {"(K-1)/(VM+K-1)", "(K-1)/(VM)"};
    case Form::zb_h1: return {"x/(1+x)", "x = (K-1)(T_F+T_I-T_W)/(M T)"};
    case Form::zb_h1_per_stage: return {"x/(1+x)", "x = (K-1)(T_F+T_I-T_W)/(V M T)"};
    case Form::none: break;
  }
  return {};
}

}  // namespace gpipe::schedules
