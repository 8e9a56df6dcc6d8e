/**
 * The addresses a standalone gateway listens on: `--addr HOST:PORT`, given
 * once or more, read strictly (a bad one is refused with an example).
 */
import { RosterError } from "../../../ground/errors.ts";
import { DEFAULT_GATEWAY_PORT } from "../settings/defaults.ts";
import type { ListenAddress } from "./gateway.ts";

/** Where a standalone gateway (`roster gateway start`, the server) listens. */
export function parseAddr(value: string, previous: ListenAddress[] = []): ListenAddress[] {
  const match = /^(\[[0-9a-fA-F:]+\]|[^:]+):(\d{1,5})$/.exec(value);
  const port = Number(match?.[2]);
  if (!match?.[1] || !(port >= 0 && port <= 65535)) {
    throw new RosterError(
      `--addr ${value}: expected HOST:PORT, e.g. 127.0.0.1:${DEFAULT_GATEWAY_PORT}`,
      {
        exitCode: 2,
      },
    );
  }
  return [...previous, { host: match[1].replace(/^\[|\]$/g, ""), port }];
}

/**
 * `[gateway] listen` when set; else loopback, on `[gateway] port` (7300).
 * Boxes never use these: they come in through the door (door.ts).
 */
export async function defaultListen(configRoot: string): Promise<ListenAddress[]> {
  const { loadConfig } = await import("../../../ground/config/load.ts");
  const section = loadConfig(configRoot).org.gateway ?? {};
  if (section.listen?.length) {
    return section.listen.reduce<ListenAddress[]>((all, entry) => parseAddr(entry, all), []);
  }
  return [{ host: "127.0.0.1", port: section.port ?? DEFAULT_GATEWAY_PORT }];
}
