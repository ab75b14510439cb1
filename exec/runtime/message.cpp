#include "exec/runtime/message.hpp"

#include <fmt/format.h>

namespace gpipe::exec {

std::string to_string(const MessageTag& tag) {
  if (tag.kind == MessageKind::tied_gradient) {
    return fmt::format("tied embedding gradient of stage {} (step {})", tag.stage.value, tag.step);
  }
  return fmt::format("{} of stage {} micro-batch {} (step {})",
                     tag.kind == MessageKind::activation ? "activation" : "gradient",
                     tag.stage.value, tag.microbatch.value, tag.step);
}

}  // namespace gpipe::exec
