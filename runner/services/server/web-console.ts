import { parseAddr } from "../../boundary/gateway/process/listen.ts";
import { type LoadedConfig, loadConfig } from "../../ground/config/load.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage } from "../../ground/errors.ts";
import type { SessionRouter } from "../../work/sessions/router.ts";
import type { RunningConsole } from "../console/serve.ts";

/**
 * The web console: loopback unless [console] listen says otherwise; a failure
 * to start it is reported and the server goes on (the CLI desk still works).
 */
export async function startWebConsole(
  paths: RosterPaths,
  config: LoadedConfig,
  router: SessionRouter,
  note: (text: string) => void,
): Promise<RunningConsole | undefined> {
  try {
    const { startConsole, DEFAULT_CONSOLE_LISTEN } = await import("../console/serve.ts");
    // the schema checked its shape; one parser for every HOST:PORT
    const [listen] = parseAddr(config.org.console?.listen ?? DEFAULT_CONSOLE_LISTEN);
    if (!listen) throw new Error("no address to listen on");
    const webConsole = await startConsole({
      paths,
      listen,
      workers: () => [...loadConfig(paths.config).workers.keys()],
      sessions: () => router.sessions(),
    });
    note(`console on ${webConsole.url}; log in with ${webConsole.loginUrl}`);
    return webConsole;
  } catch (error) {
    note(`the web console did not start: ${errorMessage(error)}`);
    return undefined;
  }
}
