import type { TomlError } from "smol-toml";

/**
 * One problem found in the operator's config, as `file:line: field: message`.
 * Every check of config/ reports in this shape, so it stands under them all
 * (the loader, the narrowing rules, the field checks, the bot bindings).
 */
export interface ConfigError {
  file: string;
  line: number;
  field: string;
  message: string;
}

export function formatConfigError(error: ConfigError): string {
  return `${error.file}:${error.line}: ${error.field}: ${error.message}`;
}

/** A TOML syntax error as a config problem: file, line, first line of the parser's message. */
export function tomlSyntaxError(error: TomlError, display: string): ConfigError {
  return {
    file: display,
    line: error.line,
    field: "(syntax)",
    message: error.message.split("\n")[0] ?? "invalid TOML",
  };
}
