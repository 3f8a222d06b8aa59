#include "repl/commands.hpp"

#include <ostream>

#include "repl/session.hpp"

namespace pxl {

namespace {

CommandResult cmd_help(Session& s, const std::string&) {
  std::ostream& out = s.out();
  out << "Enter pxl statements; a block (def, for, if, ...) ends with a blank line.\n"
      << "Expression values are echoed. Tab completes names and attributes.\n"
      << "Commands:\n";
  for (const Command& c : commands()) {
    std::string head = std::string(c.name) + (c.args.empty() ? "" : " " + std::string(c.args));
    out << "  " << head << std::string(head.size() < 14 ? 14 - head.size() : 1, ' ') << c.help
        << "\n";
  }
  out << "Commands may be abbreviated (:q). Ctrl-C clears the input, Ctrl-D quits.\n";
  return CommandResult::Continue;
}

CommandResult cmd_quit(Session&, const std::string&) { return CommandResult::Quit; }

CommandResult cmd_load(Session& s, const std::string& arg) {
  if (arg.empty()) {
    s.report_usage(":load needs a file name, e.g. :load model.pxl");
    return CommandResult::Continue;
  }
  s.interp().run_file(arg);
  return CommandResult::Continue;
}

CommandResult cmd_reset(Session& s, const std::string&) {
  s.interp().reset();
  s.out() << "session reset\n";
  return CommandResult::Continue;
}

CommandResult cmd_type(Session& s, const std::string& arg) {
  if (arg.empty()) {
    s.report_usage(":type needs an expression, e.g. :type np.ones((2, 3))");
    return CommandResult::Continue;
  }
  s.out() << s.interp().type_of(arg) << "\n";
  return CommandResult::Continue;
}

// Commands that print what an Interpreter query returns for their argument.
template <std::string (Interpreter::*Query)(const std::string&)>
CommandResult query(Session& s, const std::string& arg, const char* usage,
                    bool arg_optional = false) {
  if (arg.empty() && !arg_optional) {
    s.report_usage(usage);
    return CommandResult::Continue;
  }
  s.out() << (s.interp().*Query)(arg);
  return CommandResult::Continue;
}

CommandResult cmd_ir(Session& s, const std::string& a) {
  return query<&Interpreter::ir_of>(s, a, ":ir needs a call, e.g. :ir f(x)");
}
CommandResult cmd_comm(Session& s, const std::string& a) {
  return query<&Interpreter::comm_of>(s, a, ":comm needs a call, e.g. :comm step(params, batch)");
}
CommandResult cmd_llvm(Session& s, const std::string& a) {
  return query<&Interpreter::llvm_of>(s, a, ":llvm needs a call, e.g. :llvm f(x)");
}
CommandResult cmd_ptx(Session& s, const std::string& a) {
  return query<&Interpreter::ptx_of>(s, a, ":ptx needs a call, e.g. :ptx f(x)");
}
CommandResult cmd_sharding(Session& s, const std::string& a) {
  return query<&Interpreter::sharding_of>(s, a, ":sharding needs an array, e.g. :sharding x");
}
CommandResult cmd_mesh(Session& s, const std::string& a) {
  return query<&Interpreter::mesh_of>(s, a, "", true);
}
CommandResult cmd_time(Session& s, const std::string& a) {
  return query<&Interpreter::time_of>(s, a, ":time needs an expression, e.g. :time f(x)");
}

constexpr Command kCommands[] = {
    {":help", "", "show this help", cmd_help},
    {":quit", "", "leave the REPL", cmd_quit},
    {":load", "FILE", "run a .pxl file in this session", cmd_load},
    {":reset", "", "forget every definition", cmd_reset},
    {":type", "EXPR", "show the type of EXPR (dtype and shape for arrays)", cmd_type},
    {":ir", "CALL", "show the IR a call traces to, e.g. :ir f(x)", cmd_ir},
    {":comm", "CALL", "show the collectives of a pmap/shard_map call and their bytes", cmd_comm},
    {":llvm", "CALL", "show the fused kernels of a call as optimized LLVM IR", cmd_llvm},
    {":ptx", "CALL", "show the fused kernels of a call as PTX (sm_90)", cmd_ptx},
    {":mesh", "[MESH]", "list the devices, or show a mesh's device grid", cmd_mesh},
    {":sharding", "EXPR", "draw which device holds which block of an array", cmd_sharding},
    {":time", "EXPR", "evaluate EXPR and report how long it took", cmd_time},
};

} // namespace

std::span<const Command> commands() { return kCommands; }

const Command* find_command(std::string_view word) {
  const Command* found = nullptr;
  for (const Command& c : kCommands) {
    if (c.name == word) return &c;
    if (word.size() > 1 && c.name.substr(0, word.size()) == word) {
      if (found) return nullptr; // ambiguous prefix
      found = &c;
    }
  }
  return found;
}

std::string command_names() {
  std::string names;
  for (const Command& c : kCommands) names += (names.empty() ? "" : " ") + std::string(c.name);
  return names;
}

} // namespace pxl
