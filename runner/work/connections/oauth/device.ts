import { setTimeout as sleep } from "node:timers/promises";
import {
  endpointRefusal,
  type Granted,
  type OAuthClient,
  postForm,
  requestTokens,
  TokenRefusal,
} from "../../../boundary/gateway/credentials/token-endpoint.ts";
import type { Upstreams } from "../../../boundary/gateway/upstream/pools.ts";
import { RosterError } from "../../../ground/errors.ts";

/**
 * The device flow (RFC 8628), for a host without a browser: the provider
 * gives a short code, the person enters it on any device's browser, and the
 * host asks the token endpoint at the provider's pace until consent is given,
 * refused, or the code expires.
 */
export interface DeviceSignIn {
  deviceUrl: URL;
  tokenUrl: URL;
  scopes: string[];
  client: OAuthClient;
  /** Tells the person where to go and what to type. */
  say(line: string): void;
}

const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";
/** RFC 8628 §3.2: 5 seconds when the provider names no interval. */
const DEFAULT_INTERVAL_SECS = 5;

export async function deviceSignIn(upstreams: Upstreams, sign: DeviceSignIn): Promise<Granted> {
  const fields: Record<string, string> = {};
  if (sign.scopes.length) fields.scope = sign.scopes.join(" ");
  // a Basic-authenticated client still names itself: the device endpoint is keyed by client_id
  if (sign.client.auth === "basic" && sign.client.id !== undefined)
    fields.client_id = sign.client.id;
  const answer = await postForm(upstreams, sign.deviceUrl, fields, sign.client).catch(
    (error: unknown) => {
      throw refused(error);
    },
  );
  if (answer.status !== 200) throw refused(endpointRefusal(sign.deviceUrl, answer));
  const given = readDeviceAnswer(answer.json, sign.deviceUrl);
  sign.say(
    `open ${given.verificationUri} in any browser and enter the code ${given.userCode}${given.complete ? ` (or open ${given.complete})` : ""}; it expires in ${Math.round(given.expiresInSecs / 60)} minutes`,
  );
  let interval = given.intervalSecs;
  const until = Date.now() + given.expiresInSecs * 1000;
  while (Date.now() < until) {
    await sleep(interval * 1000);
    try {
      return await requestTokens(
        upstreams,
        sign.tokenUrl,
        { grant_type: DEVICE_GRANT, device_code: given.deviceCode },
        sign.client,
      );
    } catch (error) {
      if (!(error instanceof TokenRefusal)) throw error;
      if (error.code === "authorization_pending") continue;
      if (error.code === "slow_down") {
        interval += 5;
        continue;
      }
      if (error.code === "access_denied")
        throw new RosterError("consent was not given (access_denied); nothing was stored", {
          exitCode: 1,
        });
      if (error.code === "expired_token") break;
      throw refused(error);
    }
  }
  throw new RosterError("the device code expired before consent was given; nothing was stored", {
    exitCode: 1,
    hint: "sign in again",
  });
}

interface DeviceAnswer {
  deviceCode: string;
  userCode: string;
  verificationUri: string;
  complete?: string;
  expiresInSecs: number;
  intervalSecs: number;
}

function readDeviceAnswer(json: unknown, url: URL): DeviceAnswer {
  const fields = typeof json === "object" && json !== null ? (json as Record<string, unknown>) : {};
  // Google says verification_url, as the draft did; everyone else verification_uri
  const verification = fields.verification_uri ?? fields.verification_url;
  const { device_code: deviceCode, user_code: userCode } = fields;
  if (
    typeof deviceCode !== "string" ||
    typeof userCode !== "string" ||
    typeof verification !== "string"
  )
    throw new RosterError(
      `the device endpoint ${url.host} answered without a device_code, user_code and verification_uri`,
      { exitCode: 1 },
    );
  const number = (value: unknown, fallback: number) =>
    typeof value === "number" && value > 0 ? value : fallback;
  const complete = fields.verification_uri_complete;
  return {
    deviceCode,
    userCode: userCode.slice(0, 64),
    verificationUri: verification.slice(0, 500),
    ...(typeof complete === "string" ? { complete: complete.slice(0, 500) } : {}),
    expiresInSecs: number(fields.expires_in, 600),
    intervalSecs: number(fields.interval, DEFAULT_INTERVAL_SECS),
  };
}

function refused(error: unknown): RosterError {
  const message = error instanceof Error ? error.message : String(error);
  return new RosterError(`${message}; nothing was stored`, { exitCode: 1 });
}
