import { type Static, Type } from "@sinclair/typebox";
import { ServerName } from "./chat-schema.ts";

/**
 * A class of channels (`channels = { servers = […], surfaces = […] }`): what
 * a grant or an action is limited to, judged against the channels a run's
 * input came from (records/channels/channel-class.ts). `servers` names a
 * platform's servers (a guild, a workspace) as `<platform>-<server id>`
 * (lower case, chat-schema.ts); `surfaces` the kinds: `dm`, `room`, a
 * platform's own (the terminal's `term`, as it declares it: ground/chat/
 * terms.ts surfaceKinds), and `none` for a run no channel started (a
 * command line, a schedule); a room class, `public` or `private`, which
 * admits a room only by the class its platform's listener recorded from the
 * platform's own permissions (records/channels/surface-class.ts: none
 * recorded, none admitted); or one channel, by its roster id or the
 * platform's own id for it. Each field left out admits everything it would
 * name.
 */
export type Surface = string;

export const ChannelClass = Type.Object(
  {
    servers: Type.Optional(
      Type.Array(ServerName, {
        minItems: 1,
        uniqueItems: true,
      }),
    ),
    surfaces: Type.Optional(
      Type.Array(Type.String({ format: "chat-surface-class" }), {
        minItems: 1,
        uniqueItems: true,
      }),
    ),
  },
  { additionalProperties: false },
);
export type ChannelClass = Static<typeof ChannelClass>;
