import { storeCredential } from "../../runner/work/runs/credentials.ts";
import { until } from "./chat-turns.ts";
import { ModelServer } from "./model-server.ts";
import { freePort, makeRosterRoot, type RosterRoot } from "./roster-root.ts";
import { SmtpSink } from "./smtp.ts";
import { stopProcess } from "./stop-process.ts";

/**
 * A real `roster server start` with its console on a free loopback port,
 * over a deployment pointed at the scripted model, with an SMTP sink holding
 * elf's email credential: what the console's browser suites open. `prepare`
 * runs before the server starts (a worker.toml to write, say).
 */
export interface ConsoleServer {
  model: ModelServer;
  smtp: SmtpSink;
  deployment: RosterRoot;
  /** The console's origin, and the login link the server printed. */
  base: string;
  login: string;
  stop(): Promise<void>;
}

export async function startConsoleServer(options: {
  extraOrg?: string;
  modelKey?: string;
  prepare?: (deployment: RosterRoot) => Promise<void>;
}): Promise<ConsoleServer> {
  const model = await new ModelServer().start("127.0.0.1");
  const smtp = await SmtpSink.start({ user: "roster", pass: "smtp-secret" });
  const port = await freePort();
  const deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
    ...(options.modelKey ? { modelKey: options.modelKey } : {}),
    extraOrg: `${options.extraOrg ?? ""}\n[console]\nlisten = "127.0.0.1:${port}"\n`,
  });
  await storeCredential(deployment.paths.vault, "smtp", smtp.vaultCredential("elf@roster.test"));
  await options.prepare?.(deployment);
  const server = deployment.spawnRoster(["server", "start", "--no-listen"]);
  let log = "";
  server.stderr.on("data", (chunk: Buffer) => {
    log += chunk.toString();
  });
  await until(() => /log in with \S+/.test(log), "the console's login link", 30_000);
  const login = /log in with (\S+)/.exec(log)?.[1] ?? "";
  if (!login) throw new Error(`the server printed no login link:\n${log}`);
  return {
    model,
    smtp,
    deployment,
    base: new URL(login).origin,
    login,
    stop: async () => {
      await stopProcess(server);
      await model.stop();
      await smtp.stop();
      await deployment.cleanup();
    },
  };
}
