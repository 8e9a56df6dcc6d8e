import { parseAddr } from "../../boundary/gateway/process/listen.ts";
import type { OrgConfig } from "../../ground/config/config-schema.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { DEFAULT_WEBHOOK_LISTEN } from "../../ground/config/webhook-schema.ts";
import { errorMessage } from "../../ground/errors.ts";
import type { RunningHooks } from "./listener.ts";
import { secretProblem } from "./secret.ts";

/**
 * The webhook listener, when org.toml has a `[[webhook]]` (off otherwise:
 * nothing listens, and no code of it loads). Bound where `[webhooks] listen`
 * says, loopback by default. The hooks are read at start: a hook added or
 * changed counts from the next `roster server start`. A failure to listen is
 * said and the server goes on: its other work does not depend on it.
 */
export async function startHooks(
  paths: RosterPaths,
  org: Pick<OrgConfig, "webhook" | "webhooks">,
  note: (text: string) => void,
): Promise<RunningHooks | undefined> {
  const hooks = org.webhook ?? [];
  if (!hooks.length) return undefined;
  const where = org.webhooks?.listen ?? DEFAULT_WEBHOOK_LISTEN;
  try {
    const [listen] = parseAddr(where);
    if (!listen) throw new Error("no address to listen on");
    const { serveHooks } = await import("./listener.ts");
    const running = await serveHooks({ paths, listen, hooks, note });
    for (const hook of hooks) {
      note(
        `webhook ${hook.name} on ${running.url}${hook.name} (${hook.scheme}) → tasks for ${hook.worker}`,
      );
      // said at start too: a sender set up now would be refused from its first delivery
      const problem = secretProblem(paths, hook.secret);
      if (problem) note(`webhook ${hook.name}: ${problem}`);
    }
    return running;
  } catch (error) {
    note(`webhooks are not served (webhooks.listen ${where}): ${errorMessage(error)}`);
    return undefined;
  }
}
