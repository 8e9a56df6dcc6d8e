import { join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { readCredential } from "../../../boundary/gateway/credentials/vault.ts";
import { appendJsonLine } from "../../../ground/files/append-line.ts";
import { oneLine, renderParts } from "../../../ground/text/message-parts.ts";
import type { OperatorDm } from "../../chat/platform.ts";
import { CHAT_PLATFORMS } from "../../chat/platforms.ts";
import type { ExecutionContext, Executor } from "../../executor.ts";

/**
 * message-user: a note from the worker to its operator. It goes as a DM on
 * the first chat platform (in the order services/chat/platforms.ts lists
 * them) whose vault credential, named after the platform, carries `owner_id`
 * beside its bot token; else to the local inbox (audit/messages.jsonl, one
 * line per message, read with `roster inbox`). A DM that fails lands in the
 * inbox instead, with the reason in the result: a note to the operator is
 * never lost to an outage.
 */
const Payload = Type.Object(
  { text: Type.String({ minLength: 1, maxLength: 20_000 }) },
  { additionalProperties: false },
);
type Payload = Static<typeof Payload>;

export function inboxFile(auditDir: string): string {
  return join(auditDir, "messages.jsonl");
}

function toInbox(payload: Payload, context: ExecutionContext): void {
  appendJsonLine(inboxFile(context.paths.audit), {
    ts: new Date().toISOString(),
    worker: context.worker,
    key: context.key,
    text: payload.text,
  });
}

const ownerOf = (vault: string, name: string): string | undefined => {
  const owner = readCredential(vault, name)?.owner_id;
  return typeof owner === "string" && owner ? owner : undefined;
};

/** The platform a note to the operator goes to, and whom there; none: the inbox. */
function operatorDm(vault: string): { dm: OperatorDm; owner: string } | undefined {
  for (const platform of CHAT_PLATFORMS) {
    if (!platform.operatorDm) continue;
    const owner = ownerOf(vault, platform.name);
    if (owner) return { dm: platform.operatorDm, owner };
  }
  return undefined;
}

export const messageUser: Executor<Payload> = {
  schema: Payload,
  summary: (payload) => `message to you: ${oneLine(payload.text, 80)}`,
  // given the vault, the desk shows where it would land and the parts a DM would post
  render: (payload, context?: Omit<ExecutionContext, "key">) => {
    if (!context) return payload.text;
    const to = operatorDm(context.paths.vault);
    if (to)
      return renderParts(`To: ${to.dm.label} DM with user ${to.owner}`, to.dm.parts(payload.text));
    return renderParts("To: the inbox (roster inbox)", [payload.text]);
  },
  async run(payload, context) {
    const to = operatorDm(context.paths.vault);
    if (to) {
      try {
        const parts = to.dm.parts(payload.text);
        if (parts.length === 0) throw new Error("nothing to post: the text is only whitespace");
        return await to.dm.send(to.owner, parts, context);
      } catch (error) {
        toInbox(payload, context);
        return {
          delivered: "inbox",
          dm_failed: error instanceof Error ? error.message : String(error),
        };
      }
    }
    toInbox(payload, context);
    return { delivered: "inbox" };
  },
};
