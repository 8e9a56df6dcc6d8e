/**
 * Access: when the gateway refuses a request for want of a grant (a 403 that
 * names no rule), the worker asks the operator for one. The tool only
 * proposes: the action host shows the operator the exact edit of the config
 * it would make, and nothing changes until a human approves it.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "@sinclair/typebox";
import { propose } from "./lib/action-words.ts";
import { guarded } from "./lib/tool-guard.ts";

/** The intent the tool submits: the operator grants it by this name (`[[action]] name`). */
export const INTENT = "request-access";

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

function loadAccess(pi: ExtensionAPI): void {
  pi.registerTool({
    name: "request_access",
    label: "Request access",
    description:
      "Ask the operator to let your requests to a host through the gateway, when it refused them for want of a grant " +
      "(403 with no rule): one exact host, the methods, the narrowest path prefix, and why. It always waits for a human: " +
      "the answer says pending (stop here and don't ask again meanwhile; once approved, your next request there, over " +
      "https, goes through), denied (with the reason) or error (naming the field).",
    parameters: Type.Object({
      host: Type.String({
        minLength: 1,
        description: 'the exact host name, e.g. "api.example.com": no wildcard, no port',
      }),
      methods: Type.Array(Type.Union(METHODS.map((method) => Type.Literal(method))), {
        minItems: 1,
        description: "the HTTP methods you need there",
      }),
      path_prefix: Type.String({
        minLength: 1,
        description:
          'the narrowest path prefix that covers what you need, e.g. "/v1/issues/" ("/" is the whole host)',
      }),
      why: Type.String({
        minLength: 1,
        maxLength: 1000,
        description: "what you need it for; the person deciding reads this",
      }),
    }),
    execute: (_id, params, signal) =>
      propose(
        "request_access",
        INTENT,
        {
          host: params.host,
          methods: params.methods,
          path_prefix: params.path_prefix,
          why: params.why,
        },
        undefined,
        { signal },
      ),
  });
}

// every tool call runs guarded: an error its work raises later ends that call, not the run
export default guarded("access", loadAccess);
