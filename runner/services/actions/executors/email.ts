import { type Static, Type } from "@sinclair/typebox";
import { createTransport } from "nodemailer";
import { readCredential } from "../../../boundary/gateway/credentials/vault.ts";
import { hostCa } from "../../../boundary/gateway/trust/host-trust.ts";
import { oneLine } from "../../../ground/text/message-parts.ts";
import type { Executor } from "../../executor.ts";

/**
 * email: plain-text mail over SMTP with nodemailer. The `smtp` vault
 * credential holds host, port, user, pass and from (and optionally `ca`, a PEM
 * the server's certificate chains to); port 465 is implicit TLS, any other
 * port must offer STARTTLS (required: the password never crosses in clear).
 * The gate id becomes the Message-ID, so a retried approval is recognisable
 * as the same message.
 */
/** `someone@host`, or `Name <someone@host>` */
const Address = Type.String({
  minLength: 3,
  maxLength: 320,
  pattern: "^([^<>@\\r\\n]*<[^\\s@<>]+@[^\\s@<>]+>|[^\\s@<>]+@[^\\s@<>]+)$",
});
const Payload = Type.Object(
  {
    to: Type.Array(Address, { minItems: 1, maxItems: 50 }),
    subject: Type.String({ minLength: 1, maxLength: 998 }),
    body: Type.String({ maxLength: 200_000 }),
  },
  { additionalProperties: false },
);
type Payload = Static<typeof Payload>;

const SEND_TIMEOUT_MS = 20_000;

export const email: Executor<Payload> = {
  schema: Payload,
  summary: (payload) => `email to ${payload.to.join(", ")}: ${oneLine(payload.subject, 60)}`,
  render: (payload) =>
    `To: ${payload.to.join(", ")}\nSubject: ${payload.subject}\n\n${payload.body}`,
  async run(payload, context) {
    const smtp = readCredential(context.paths.vault, "smtp");
    const host = smtp?.host;
    const from = smtp?.from;
    if (!smtp || typeof host !== "string" || typeof from !== "string") {
      throw new Error(
        'no SMTP credential: store host, port, user, pass and from as the vault credential "smtp" (roster login smtp --field host=… --field port=465 --field user=… --field pass=… --field from=…)',
      );
    }
    const port = Number(smtp.port ?? 465);
    const ca = hostCa();
    const transport = createTransport({
      host,
      port,
      secure: port === 465,
      requireTLS: port !== 465,
      ...(typeof smtp.user === "string" && typeof smtp.pass === "string"
        ? { auth: { user: smtp.user, pass: smtp.pass } }
        : {}),
      tls: { ca: typeof smtp.ca === "string" ? smtp.ca : ca },
      connectionTimeout: SEND_TIMEOUT_MS,
      greetingTimeout: SEND_TIMEOUT_MS,
      socketTimeout: SEND_TIMEOUT_MS,
    });
    try {
      const info = await transport.sendMail({
        from,
        to: payload.to,
        subject: payload.subject,
        text: payload.body,
        messageId: `<${context.key}@roster.invalid>`,
      });
      return {
        delivered: "smtp",
        to: payload.to,
        message_id: info.messageId,
        status: info.response,
      };
    } finally {
      transport.close();
    }
  },
};
