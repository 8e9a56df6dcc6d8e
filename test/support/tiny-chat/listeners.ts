import { fork } from "node:child_process";
import { join } from "node:path";
import { botBindings } from "../../../runner/ground/config/bot-bindings.ts";
import { loadConfig } from "../../../runner/ground/config/load.ts";
import type { RosterPaths } from "../../../runner/ground/config/paths.ts";
import { OfferDesk } from "../../../runner/services/actions/offers.ts";
import { ListenerSupervisor } from "../../../runner/services/listeners/supervisor.ts";
import { chatCommands } from "../../../runner/services/slash/from-chat.ts";
import { SessionRouter } from "../../../runner/work/sessions/router.ts";

/**
 * The server's chat side as `roster server start` composes it (services/
 * server/daemon.ts: the session router, the listener supervisor, the desk's
 * offers, the commands from chat), in the test's process, where tiny chat
 * is on the list. Its one difference is the child each binding gets: the
 * roster command's list names no tiny chat, so the child is that command's
 * body with tiny chat added (listener-child.ts), over the same fork and IPC.
 */
const CHILD = join(import.meta.dirname, "listener-child.ts");

export interface TinyServer {
  router: SessionRouter;
  listeners: ListenerSupervisor;
  notes: string[];
  stop(): Promise<void>;
}

export function startTinyServer(paths: RosterPaths, root: string): TinyServer {
  const env = { ...process.env, ROSTER_ROOT: root };
  const notes: string[] = [];
  const note = (text: string) => {
    notes.push(text);
    if (process.env.ROSTER_TEST_LOG) process.stderr.write(`roster: ${text}\n`);
  };
  const router = new SessionRouter({
    paths,
    note,
    env,
    queueBound: 4,
    replyBy: (provider) => `only through the ${provider}_send action`,
    recordReplies: false,
  });
  const listeners = new ListenerSupervisor({
    paths,
    router,
    note,
    env,
    offers: new OfferDesk(paths, () => loadConfig(paths.config).org.chat),
    commands: chatCommands(paths),
    launch: (binding, launchEnv) =>
      fork(CHILD, [binding.worker, binding.platform], {
        env: launchEnv,
        execArgv: ["--import", "tsx"],
        stdio: ["ignore", "ignore", "inherit", "ipc"],
      }),
  });
  listeners.start(botBindings(loadConfig(paths.config, { vaultDir: paths.vault }).workers));
  return {
    router,
    listeners,
    notes,
    stop: async () => {
      await listeners.stop();
      await router.closeAll();
    },
  };
}
