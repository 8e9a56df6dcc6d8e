import type { EngineKind } from "./config-schema.ts";

/**
 * `[engine] kind` of this root's org.toml, for commands that reach the engine
 * without loading a worker (box build, box doctor, runs ls). Nothing when there
 * is no root, it can't be read, or it names no kind: the socket decides then.
 */
export async function configuredEngine(): Promise<{ kind?: EngineKind }> {
  const { rosterPaths } = await import("./paths.ts");
  const { loadConfig } = await import("./load.ts");
  try {
    const kind = loadConfig(rosterPaths().config).org.engine?.kind;
    return kind ? { kind } : {};
  } catch {
    return {};
  }
}
