import type { TSchema } from "@sinclair/typebox";
import type { Platform } from "../../ground/config/bot-bindings.ts";
import { oneLine, renderParts } from "../../ground/text/message-parts.ts";
import type { ExecutionContext, Executor } from "../executor.ts";
import { boundBot, recordSent } from "./bound-bot.ts";
import { type SentParts, sentParts } from "./sent-parts.ts";

/**
 * The one shape of a chat platform's sender: a message to one of its
 * channels, split into the parts the platform accepts (the desk renders the
 * same parts, so what a human approves is what is sent), posted in order by
 * the worker's own bot when it has one bound (so its words come from the bot
 * people talk to), each part recorded as it is accepted (sent-parts.ts: a
 * retried approval posts only what did not go out), and kept in the roster
 * channel's history when the payload named one. Only how to reach the
 * platform differs; that is what a platform gives.
 */
export interface ChatPayload {
  channel_id: string;
  text: string;
}

/** What a platform's sender is handed to post with. */
export interface PostContext {
  vault: string;
  /** The vault credential of the bot that speaks. */
  bot: string;
  /** The approval's key: stable across its retries. */
  key: string;
  ledger: SentParts;
}

export interface ChatSend<Payload extends ChatPayload> {
  schema: TSchema;
  /** The platform's name as people know it: "Discord". */
  label: string;
  /** Its `[channels]` key: whose bound bot speaks. */
  platform: Platform;
  parts(text: string): string[];
  /** Where, in the one-line summary: the channel (and thread). */
  where(payload: Payload): string;
  /** Where, as the desk says it after "To: <label> ". */
  destination(payload: Payload): string;
  /** Posts the parts; answers each part's id, and whether the payload named a roster channel. */
  post(
    payload: Payload,
    parts: string[],
    via: PostContext,
  ): Promise<{ ids: string[]; roster: boolean }>;
  /** The result's name for the first part's id (where the text starts). */
  idField: string;
}

export function chatSender<Payload extends ChatPayload>(
  send: ChatSend<Payload>,
): Executor<Payload> {
  return {
    schema: send.schema,
    summary: (payload) => `${send.label} ${send.where(payload)}: ${oneLine(payload.text, 70)}`,
    render: (payload) =>
      renderParts(`To: ${send.label} ${send.destination(payload)}`, send.parts(payload.text)),
    async run(payload: Payload, context: ExecutionContext) {
      const bot = boundBot(context.paths, context.worker, send.platform);
      const ledger = sentParts(context.paths, context.worker, context.key);
      const via = { vault: context.paths.vault, bot, key: context.key, ledger };
      const { ids, roster } = await send.post(payload, send.parts(payload.text), via);
      if (roster) recordSent(context.paths, payload.channel_id, context.worker, payload.text);
      return {
        sent: true,
        channel_id: payload.channel_id,
        [send.idField]: ids[0],
        parts: ids.length,
      };
    },
  };
}
