// The REPL's :commands, one table entry each, so adding a command (:ir, :llvm,
// :mesh, ...) is adding one row in commands.cpp.
#pragma once
#include <span>
#include <string>
#include <string_view>

namespace pxl {

class Session;

enum class CommandResult { Continue, Quit };

struct Command {
  std::string_view name; // with the colon: ":type"
  std::string_view args; // shown by :help, e.g. "EXPR"; empty when none
  std::string_view help; // one line
  CommandResult (*run)(Session& session, const std::string& arg);
};

std::span<const Command> commands();

// The command `word` names, exactly or as an unambiguous prefix (":q"); null
// when none or ambiguous.
const Command* find_command(std::string_view word);

// ":help :quit ..." for error messages.
std::string command_names();

} // namespace pxl
