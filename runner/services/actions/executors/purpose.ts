import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { replaceFileSync } from "../../../ground/files/atomic-replace.ts";
import type { Executor } from "../../executor.ts";
import { diffAgainst } from "./file-diff.ts";

/** purpose: a channel's purpose.md (what the channel is for), shown to the desk as a diff. */
const Payload = Type.Object(
  {
    channel_id: Type.String({ pattern: "^[A-Za-z0-9:_-]{1,100}$" }),
    purpose: Type.String({ minLength: 1, maxLength: 8000 }),
  },
  { additionalProperties: false },
);
type Payload = Static<typeof Payload>;

const purposeFile = (dataDir: string, channel: string) =>
  join(dataDir, "channels", channel, "purpose.md");

export const purpose: Executor<Payload> = {
  schema: Payload,
  summary: (payload) => `new purpose for channel ${payload.channel_id}`,
  render: (payload, context) =>
    context
      ? diffAgainst(
          purposeFile(context.paths.data, payload.channel_id),
          "purpose.md",
          payload.purpose,
        )
      : payload.purpose,
  async run(payload, context) {
    mkdirSync(join(context.paths.data, "channels", payload.channel_id), { recursive: true });
    replaceFileSync(purposeFile(context.paths.data, payload.channel_id), payload.purpose, {
      mode: 0o644,
    });
    return { status: "ok", channel_id: payload.channel_id };
  },
};
