import { type Static, Type } from "@sinclair/typebox";

/**
 * A run's provenance as the clean-room rule (clean-room.ts) judges it: the
 * channels its input came from and the people who spoke there. The runner
 * writes it into the run's record folder and reads it back
 * (runs/run-context.ts); its shape lives here, beside the rule that reads it,
 * so judging a push never reaches up into the runs.
 */
export const Participant = Type.Object({
  /** The display name the channel record keeps (`author`). */
  name: Type.String(),
  /** The handle: `author_id` without its provider (`term:alice` → `alice`). */
  handle: Type.String(),
});
export type Participant = Static<typeof Participant>;

export const RunContext = Type.Object({
  run: Type.String(),
  kind: Type.String(),
  channels: Type.Array(Type.String()),
  people: Type.Array(Participant),
});
export type RunContext = Static<typeof RunContext>;

/** A run that carried conversation content: what the clean-room rule keys on. */
export const carriesConversation = (context: Pick<RunContext, "channels">) =>
  context.channels.length > 0;
