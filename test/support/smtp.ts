/**
 * A real SMTP server on loopback (the npm package smtp-server): STARTTLS with
 * a test CA, AUTH required, every accepted message kept whole, so tests see
 * exactly what an approved email put on the wire.
 */
import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";
import { makeServerCertificate } from "./test-ca.ts";

export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
}

export class SmtpSink {
  readonly received: ReceivedMail[] = [];
  private constructor(
    private readonly server: SMTPServer,
    readonly caPem: string,
    private readonly credentials: { user: string; pass: string },
  ) {}

  static async start(credentials: { user: string; pass: string }): Promise<SmtpSink> {
    const certificate = await makeServerCertificate(["localhost"]);
    let sink: SmtpSink | undefined;
    const server = new SMTPServer({
      key: certificate.keyPem,
      cert: certificate.certPem,
      authMethods: ["PLAIN", "LOGIN"],
      onAuth(auth, _session, callback) {
        if (auth.username === credentials.user && auth.password === credentials.pass)
          callback(null, { user: auth.username });
        else callback(new Error("535 bad credentials"));
      },
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on("data", (chunk: Buffer) => chunks.push(chunk));
        stream.on("end", () => {
          sink?.received.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
            to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
            raw: Buffer.concat(chunks).toString("utf8"),
          });
          callback();
        });
      },
      logger: false,
    });
    sink = new SmtpSink(server, certificate.caPem, credentials);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return sink;
  }

  get port(): number {
    return (this.server.server.address() as AddressInfo).port;
  }

  /** The vault credential the email executor reads to send through this server. */
  vaultCredential(from: string): Record<string, string> {
    return {
      host: "localhost",
      port: String(this.port),
      user: this.credentials.user,
      pass: this.credentials.pass,
      from,
      ca: this.caPem,
    };
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
