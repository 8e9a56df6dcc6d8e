import { homedir } from "node:os";
import { join } from "node:path";

/**
 * Where roster keeps things. ROSTER_ROOT puts all three roots under one folder
 * (tests and portable installs); otherwise the XDG defaults.
 *   config/  what the operator writes (org.toml, workers/, connections/)
 *   data/    what must survive (vault/, ca/, audit/, workers/<w>/store)
 *   state/   what can be rebuilt (runs/, identity/, gateway.json)
 */
export interface RosterPaths {
  config: string;
  data: string;
  state: string;
  vault: string;
  ca: string;
  audit: string;
  identity: string;
}

export function rosterPaths(env: NodeJS.ProcessEnv = process.env): RosterPaths {
  const root = env.ROSTER_ROOT;
  const home = env.HOME ?? homedir();
  const config = root
    ? join(root, "config")
    : join(env.XDG_CONFIG_HOME ?? join(home, ".config"), "roster");
  const data = root
    ? join(root, "data")
    : join(env.XDG_DATA_HOME ?? join(home, ".local/share"), "roster");
  const state = root
    ? join(root, "state")
    : join(env.XDG_STATE_HOME ?? join(home, ".local/state"), "roster");
  return {
    config,
    data,
    state,
    vault: env.ROSTER_VAULT_DIR ?? join(data, "vault"),
    ca: env.ROSTER_CA_DIR ?? join(data, "ca"),
    audit: join(data, "audit"),
    identity: join(state, "identity"),
  };
}
