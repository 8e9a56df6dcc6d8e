/**
 * The stand-in a box holds wherever a real credential would be: every exposed
 * credential's env variable and pi's model key (box-env.ts, build-home.ts).
 * One fixed string, the same in every box and every run, so the gateway knows
 * it without being told: a request carrying it somewhere no credential is
 * injected is a box sending what it takes for a credential elsewhere
 * (gateway/judging/sentinel.ts), refused as `sentinel-leak`.
 */
export const SENTINEL = "roster-sentinel-no-real-credential-in-box";
