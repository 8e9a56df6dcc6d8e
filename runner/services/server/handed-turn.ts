import type { RosterPaths } from "../../ground/config/paths.ts";
import { groupOf, homeOf } from "../../records/channels/links.ts";
import { readMessages } from "../../records/channels/store.ts";
import { describeEvent } from "../../work/runs/pi-events.ts";
import type { SessionRouter } from "../../work/sessions/router.ts";
import { termInbound } from "../chat/terminal/talk.ts";
import type { TurnRequest } from "./run-socket.ts";

/**
 * A linked terminal's line, taken by the server (run-socket.ts `/turns`):
 * one turn of the session its link group shares with the person's chat
 * surfaces. Tool calls stream back as notes; what the worker sent to this
 * terminal (its term_send, kept in the group's history) comes back once the
 * turn is done. A terminal that isn't linked is refused: `roster talk` runs
 * its own session then.
 */
const SENT_LOOKBACK = 200;

export async function handedTurn(
  paths: RosterPaths,
  router: SessionRouter,
  request: TurnRequest,
  send: (line: Record<string, unknown>) => void,
): Promise<void> {
  if (!groupOf(paths, request.channel))
    throw new Error(`${request.channel} is not linked: roster talk runs its own session`);
  const home = homeOf(paths, request.channel);
  const since = new Date().toISOString();
  const delivered = await router.deliver(
    termInbound(request.worker, request.channel, request.author, request.text),
    {
      onEvent: (event) => {
        const shown = describeEvent(event);
        if (shown) send({ note: shown });
      },
    },
  );
  const sent = readMessages(paths, home, { last: SENT_LOOKBACK }).filter(
    (message) =>
      message.role === "worker" &&
      message.ts >= since &&
      (message.surface ?? home) === request.channel,
  );
  for (const message of sent) send({ out: message.content });
  send({
    exit: delivered.result.modelError ? 1 : 0,
    run: { id: delivered.runId },
    ...(delivered.result.modelError ? { model_error: delivered.result.modelError } : {}),
  });
}
