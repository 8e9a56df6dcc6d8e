import { RosterError } from "../../ground/errors.ts";

/**
 * Where a connection's secret comes from: an env variable named by
 * `--secret-env`, else stdin when it is piped, else a prompt on the terminal
 * that echoes nothing. Never a command-line argument: those land in shell
 * history and in every `ps` listing.
 */
export async function readSecret(options: {
  label: string;
  secretEnv?: string | undefined;
  env?: NodeJS.ProcessEnv;
}): Promise<string> {
  const env = options.env ?? process.env;
  if (options.secretEnv !== undefined) {
    const value = env[options.secretEnv];
    if (!value)
      throw new RosterError(
        `--secret-env ${options.secretEnv}: that variable is not set or empty; nothing stored`,
        { exitCode: 2 },
      );
    return value;
  }
  const secret = process.stdin.isTTY
    ? await askQuietly(`secret for ${options.label} (not shown): `)
    : await readStdin();
  if (!secret)
    throw new RosterError(`no secret given for ${options.label}; nothing stored`, {
      exitCode: 2,
      hint: "pipe it on stdin, name an env variable with --secret-env, or type it in a terminal",
    });
  return secret;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  // a trailing newline is the shell's (echo, a heredoc), never the secret's
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
}

/** Reads one line from the terminal in raw mode, so nothing typed is shown. */
export async function askQuietly(prompt: string): Promise<string> {
  const input = process.stdin;
  // the terminal stops echoing before the prompt shows: what is typed the moment it
  // appears (a fast typist, a paste, a password manager) is never shown
  input.setRawMode(true);
  process.stderr.write(prompt);
  input.resume();
  let typed = "";
  try {
    return await new Promise<string>((done, fail) => {
      const onData = (chunk: Buffer) => {
        for (const char of chunk.toString("utf8")) {
          if (char === "\r" || char === "\n" || char === "\u0004") {
            input.off("data", onData);
            done(typed);
            return;
          }
          if (char === "\u0003") {
            input.off("data", onData);
            fail(new RosterError("cancelled; nothing stored", { exitCode: 2 }));
            return;
          }
          if (char === "\u007f" || char === "\b") typed = typed.slice(0, -1);
          else typed += char;
        }
      };
      input.on("data", onData);
    });
  } finally {
    input.setRawMode(false);
    input.pause();
    process.stderr.write("\n");
  }
}
