import { type Static, Type } from "@sinclair/typebox";
import { oneLine } from "../../../ground/text/message-parts.ts";
import type { Executor } from "../../executor.ts";
import { recordSent } from "../bound-bot.ts";
import { TERM_PREFIX } from "./ids.ts";

/**
 * term: a message from the worker into a terminal channel's history
 * (data/channels/<id>/messages.jsonl, or its link group's: bound-bot.ts
 * recordSent, as every chat send is kept), which `roster talk` reads back.
 */
const Payload = Type.Object(
  {
    channel_id: Type.String({ pattern: `^${TERM_PREFIX}[A-Za-z0-9_-]{1,64}$` }),
    text: Type.String({ minLength: 1, maxLength: 40_000 }),
  },
  { additionalProperties: false },
);
type Payload = Static<typeof Payload>;

export const term: Executor<Payload> = {
  schema: Payload,
  summary: (payload) => `to terminal ${payload.channel_id}: ${oneLine(payload.text, 70)}`,
  render: (payload) => `To: terminal channel ${payload.channel_id}\n\n${payload.text}`,
  async run(payload, context) {
    // kept where every send is: the channel's history, or its link group's
    recordSent(context.paths, payload.channel_id, context.worker, payload.text);
    return { delivered: "terminal", channel_id: payload.channel_id };
  },
};
