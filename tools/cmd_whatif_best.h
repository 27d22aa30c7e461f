// `pipewright whatif best` (tools/cmd_whatif_best.cc), added to the `whatif` command.
#pragma once

namespace CLI {
class App;
}

namespace pw::tools {

void add_whatif_best(CLI::App* whatif);

}  // namespace pw::tools
