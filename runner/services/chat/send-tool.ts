import { type TProperties, Type } from "@sinclair/typebox";
import type { SendTool } from "../../ground/chat/terms.ts";

/**
 * A platform's send tool as the box shows it to the model: the channel's id,
 * the text, and what else the platform's sender takes (a thread). The box
 * names it `<platform>_send` and proposes `<platform>-send` with it
 * (extensions/proposals.ts); the action host judges what it proposes.
 */
export function sendTool(spec: {
  label: string;
  description: string;
  /** How the model is told of the channel id, when "the channel's id" says too little. */
  channel?: string;
  /** How the model is told of the text. */
  text: string;
  extra?: TProperties;
  rationale: boolean;
}): SendTool {
  return {
    label: spec.label,
    description: spec.description,
    payload: Type.Object({
      channel_id: Type.String({ minLength: 1, description: spec.channel ?? "the channel's id" }),
      text: Type.String({ minLength: 1, description: spec.text }),
      ...spec.extra,
    }),
    rationale: spec.rationale,
  };
}
