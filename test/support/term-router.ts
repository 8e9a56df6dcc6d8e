/**
 * A session router in the test's own process, fed as `roster talk` feeds it:
 * terminal channels, the operator as author. Used by tests that drive warm
 * sessions without a pty; the router and its sessions are roster's own.
 */
import type { ReadySessions } from "../../runner/work/runs/run-request.ts";
import { type Delivered, SessionRouter } from "../../runner/work/sessions/router.ts";
import type { RosterRoot } from "./roster-root.ts";

export function termRouter(
  deployment: RosterRoot,
  options: { queueBound?: number; ready?: ReadySessions } = {},
): { router: SessionRouter; send(channel: string, text: string): Promise<Delivered> } {
  const router = new SessionRouter({
    paths: deployment.paths,
    note: () => undefined,
    env: { ...process.env, ROSTER_ROOT: deployment.root },
    queueBound: options.queueBound ?? 4,
    replyBy: () => "plain text",
    recordReplies: true,
    ...(options.ready ? { ready: options.ready } : {}),
  });
  const send = (channel: string, text: string) =>
    router.deliver({
      worker: "elf",
      channel,
      provider: "term",
      author: "op",
      author_id: "term:op",
      standing: "host-op",
      text,
    });
  return { router, send };
}
