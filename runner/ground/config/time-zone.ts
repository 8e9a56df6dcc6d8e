/**
 * The zone recurring tasks read their calendar in: org.toml's
 * `[schedule] timezone`, else the host's own.
 */
export const hostZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone;

/** Why a zone name can't be used, or undefined. */
export function zoneProblem(zone: string): string | undefined {
  try {
    new Intl.DateTimeFormat("en-GB", { timeZone: zone });
    return undefined;
  } catch {
    return `"${zone}" is not a time zone this host knows (an IANA name such as "Europe/Berlin" or "UTC")`;
  }
}

/** The zone of a loaded org.toml (its `[schedule] timezone`, else the host's). */
export const scheduleZone = (org: { schedule?: { timezone?: string } | undefined }): string =>
  org.schedule?.timezone ?? hostZone();
