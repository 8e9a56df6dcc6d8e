import type { Command } from "commander";
import { RosterError } from "../ground/errors.ts";

/**
 * `roster completion bash|zsh|fish`: tab completion for every command and
 * option, generated from the command tree itself (what `--help` shows, hidden
 * commands left out), so a new command completes the day it exists. Each
 * script knows the tree as a table of command paths; walking the words typed
 * so far down that table finds where the cursor is, and offers that command's
 * subcommands, or its options after a `-`, or files where it takes none.
 */
export const SHELLS = ["bash", "zsh", "fish"] as const;

interface Entry {
  name: string;
  description: string;
}

interface Node {
  /** "roster", "roster box", "roster box build" */
  path: string;
  commands: Entry[];
  /** Each spelling of each option ("--worker", "-v"), with whether it takes a value. */
  options: Array<Entry & { takesValue: boolean }>;
}

/** Names and flags go into shell code unquoted in places: only what a command name can be. */
const SAFE = /^-{0,2}[A-Za-z0-9][A-Za-z0-9_-]*$/;

function safe(word: string): string {
  if (!SAFE.test(word))
    throw new Error(`"${word}" can't go into a completion script (a command or option name?)`);
  return word;
}

const firstLine = (text: string) => {
  const line = text.split("\n")[0] ?? "";
  return line.length > 90 ? `${line.slice(0, 87)}...` : line;
};

/** Every visible command of the tree, the root first, as the help sees them. */
export function commandNodes(program: Command): Node[] {
  const help = program.createHelp();
  const nodes: Node[] = [];
  const visit = (command: Command, path: string) => {
    const children = help.visibleCommands(command);
    nodes.push({
      path,
      commands: children.map((child) => ({
        name: safe(child.name()),
        description: firstLine(child.description()),
      })),
      options: help.visibleOptions(command).flatMap((option) =>
        [option.long, option.short].flatMap((flag) =>
          flag
            ? [
                {
                  name: safe(flag),
                  description: firstLine(option.description),
                  takesValue: option.required || option.optional,
                },
              ]
            : [],
        ),
      ),
    });
    for (const child of children) visit(child, `${path} ${child.name()}`);
  };
  visit(program, safe(program.name()));
  return nodes;
}

export function completionScript(program: Command, shell: string): string {
  const nodes = commandNodes(program);
  const name = program.name();
  if (shell === "bash") return bashScript(name, nodes);
  if (shell === "zsh") return zshScript(name, nodes);
  if (shell === "fish") return fishScript(name, nodes);
  throw new RosterError(`no completion for the shell "${shell}": ${SHELLS.join(", ")}`, {
    exitCode: 2,
  });
}

/** 'text' for sh-like shells (bash, zsh): a ' closes, is escaped, and reopens. */
const shQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

function bashScript(name: string, nodes: Node[]): string {
  const cases = (pick: (node: Node) => string[]) =>
    nodes
      .map((node) => `    ${shQuote(node.path)}) echo ${shQuote(pick(node).join(" "))} ;;`)
      .join("\n");
  return `# bash completion for ${name}, generated from its command tree by \`${name} completion bash\`.
# Load it with: source <(${name} completion bash)
# or save it as ~/.local/share/bash-completion/completions/${name}
_${name}_commands() {
  case "$1" in
${cases((node) => node.commands.map((c) => c.name))}
  esac
}
_${name}_options() {
  case "$1" in
${cases((node) => node.options.map((o) => o.name))}
  esac
}
_${name}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" path=${name} word i
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    [[ "$word" == -* ]] && continue
    case " $(_${name}_commands "$path") " in
      *" $word "*) path="$path $word" ;;
    esac
  done
  local words
  if [[ "$cur" == -* ]]; then words="$(_${name}_options "$path")"; else words="$(_${name}_commands "$path")"; fi
  COMPREPLY=()
  [[ -n "$words" ]] && mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
  return 0
}
complete -o default -F _${name} ${name}
`;
}

function zshScript(name: string, nodes: Node[]): string {
  // (key value …) pairs: a quoted key in a subscript would keep its quotes
  const table = (variable: string, pick: (node: Node) => Entry[]) =>
    `${variable}=(\n${nodes
      .filter((node) => pick(node).length)
      .map(
        (node) =>
          `  ${shQuote(node.path)} ${shQuote(
            pick(node)
              .map((entry) => `${entry.name}:${entry.description}`)
              .join("\n"),
          )}`,
      )
      .join("\n")}\n)`;
  return `#compdef ${name}
# zsh completion for ${name}, generated from its command tree by \`${name} completion zsh\`.
# Load it with: source <(${name} completion zsh)   (after compinit)
# or save it as _${name} in a folder on your $fpath
typeset -gA _${name}_commands _${name}_options
${table(`_${name}_commands`, (node) => node.commands)}
${table(`_${name}_options`, (node) => node.options)}

_${name}() {
  local p=${name} w i
  local -a entries
  for ((i = 2; i < CURRENT; i++)); do
    w=\${words[i]}
    [[ $w == -* ]] && continue
    if [[ $'\\n'\${_${name}_commands[$p]} == *$'\\n'\${(b)w}:* ]]; then p="$p $w"; fi
  done
  if [[ $PREFIX == -* ]]; then
    entries=(\${(f)_${name}_options[$p]})
    _describe -t options option entries
  elif [[ -n \${_${name}_commands[$p]} ]]; then
    entries=(\${(f)_${name}_commands[$p]})
    _describe -t commands command entries
  else
    _files
  fi
}

if [[ \${funcstack[1]} == _${name} ]]; then
  _${name} "$@"
else
  compdef _${name} ${name}
fi
`;
}

/** 'text' for fish: \\ and ' escaped inside single quotes. */
const fishQuote = (text: string) => `'${text.replace(/[\\']/g, "\\$&")}'`;

function fishScript(name: string, nodes: Node[]): string {
  const lines: string[] = [];
  for (const node of nodes) {
    const at = fishQuote(`__${name}_at ${node.path}`);
    for (const command of node.commands)
      lines.push(
        `complete -c ${name} -f -n ${at} -a ${command.name} -d ${fishQuote(command.description)}`,
      );
    for (const option of node.options) {
      const flag = option.name.startsWith("--")
        ? `-l ${option.name.slice(2)}`
        : `-s ${option.name.slice(1)}`;
      lines.push(
        `complete -c ${name} -n ${at} ${flag}${option.takesValue ? " -r" : ""} -d ${fishQuote(option.description)}`,
      );
    }
  }
  return `# fish completion for ${name}, generated from its command tree by \`${name} completion fish\`.
# Load it with: ${name} completion fish | source
# or save it as ~/.config/fish/completions/${name}.fish
set -g __${name}_paths ${nodes.map((node) => fishQuote(node.path)).join(" ")}
function __${name}_path
    set -l path ${name}
    set -l typed (commandline -opc)
    set -e typed[1]
    for word in $typed
        if contains -- "$path $word" $__${name}_paths
            set path "$path $word"
        end
    end
    echo $path
end
function __${name}_at
    test (__${name}_path) = "$argv"
end
${lines.join("\n")}
`;
}

export function registerCompletionCommand(program: Command): void {
  program
    .command("completion <shell>")
    .description(
      `print a tab-completion script for ${SHELLS.join(", ")}; e.g. source <(roster completion bash)`,
    )
    .action((shell: string) => {
      process.stdout.write(completionScript(program, shell));
    });
}
