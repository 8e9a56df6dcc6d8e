import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { doorDir } from "../../runner/boundary/gateway/doors/door.ts";
import { mintToken } from "../../runner/boundary/gateway/doors/identity.ts";
import {
  Gateway,
  type GatewayOptions,
  type ListenAddress,
} from "../../runner/boundary/gateway/process/gateway.ts";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { lazyActionHost } from "../../runner/services/actions/lazy-host.ts";

/** A throwaway roster root with an org.toml, and the real gateway started on it. */
export interface GatewayEnv {
  root: string;
  paths: RosterPaths;
  gateway: Gateway;
  token(worker: string, runId?: string): Promise<string>;
  writeOrg(toml: string): Promise<void>;
  writeVault(name: string, credential: Record<string, string>): Promise<void>;
  restart(): Promise<void>;
  cleanup(): Promise<void>;
}

export async function startGatewayEnv(
  orgToml: string,
  options: {
    listen?: ListenAddress[];
    timeouts?: GatewayOptions["timeouts"];
    /** Open the door boxes come in by (state/doors/test): the gateway's `door`. */
    door?: boolean;
    /** What the gateway says to its operator (a config taken or refused): nothing when not given. */
    note?: (text: string) => void;
  } = {},
): Promise<GatewayEnv> {
  const root = await mkdtemp(join(tmpdir(), "roster-gw-"));
  const paths = rosterPaths({ ROSTER_ROOT: root });
  await mkdir(paths.config, { recursive: true });
  await writeFile(join(paths.config, "org.toml"), orgToml);
  const listen = options.listen ?? [{ host: "127.0.0.1", port: 0 }];
  const start = () =>
    Gateway.start({
      paths,
      listen,
      actions: lazyActionHost,
      recordState: true,
      ...(options.door ? { door: doorDir(paths.state, "test") } : {}),
      ...(options.timeouts ? { timeouts: options.timeouts } : {}),
      // quiet unless a test listens: every config a test writes is said taken
      note: options.note ?? (() => undefined),
    });
  const env: GatewayEnv = {
    root,
    paths,
    gateway: await start(),
    token: (worker, runId = `run-${worker}-${Date.now()}`) =>
      mintToken(paths.identity, { subject: `org/${worker}`, runId }),
    writeOrg: async (toml) => {
      await writeFile(join(paths.config, "org.toml"), toml);
      // the gateway polls for changes; give it past its check interval
      await new Promise((resolve) => setTimeout(resolve, 600));
    },
    writeVault: async (name, credential) => {
      await mkdir(paths.vault, { recursive: true, mode: 0o700 });
      const file = join(paths.vault, `${name}.json`);
      await writeFile(file, JSON.stringify(credential), { mode: 0o600 });
      await chmod(file, 0o600);
    },
    restart: async () => {
      const port = env.gateway.port;
      await env.gateway.stop();
      listen.splice(0, listen.length, ...listen.map((entry) => ({ ...entry, port })));
      env.gateway = await start();
    },
    cleanup: async () => {
      await env.gateway.stop();
      await rm(root, { recursive: true, force: true });
    },
  };
  return env;
}

export function proxyUrlFor(
  env: GatewayEnv,
  token: string | undefined,
  host = "127.0.0.1",
): string {
  return token
    ? `http://${token}:x@${host}:${env.gateway.port}`
    : `http://${host}:${env.gateway.port}`;
}
