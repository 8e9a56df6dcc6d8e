import { existsSync } from "node:fs";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";
import type { CredentialOrigin } from "../../ground/vault/credential-meta.ts";
import { vaultFile } from "../../ground/vault/vault-file.ts";
import { storeCredential } from "../runs/credentials.ts";
import { checkName, connectionFile, FIELD } from "./manage.ts";
import { secretFieldOf, storedFields } from "./stored-fields.ts";

/**
 * `roster connection secret`: stores or replaces a secret, with any
 * non-secret fields beside it (`--field user=alice`). For a connection the
 * secret's field is the one its file injects. A name no connection file has
 * is a credential the host itself uses — SMTP's for the email action, the
 * parent proxy's (`[gateway] upstream_proxy_auth`) — and holds a user and a
 * password the way the smtp recipe stores them: the secret is its `pass`.
 * Every check runs before the secret is asked for.
 */
export const HOST_SECRET_FIELD = "pass";

export interface StoredSecret {
  file: string;
  /** The field the secret went to. */
  field: string;
  /** The other fields the credential now holds (names only). */
  beside: string[];
  /** Whether the name is a connection's (else a credential the host uses). */
  connection: boolean;
}

export async function storeSecret(
  paths: RosterPaths,
  name: string,
  /** Asked only after every check passed; told which field it fills, and whether for a connection. */
  secret: (what: { field: string; connection: boolean }) => Promise<string>,
  options: { fields?: Record<string, string>; origin?: Omit<CredentialOrigin, "command"> } = {},
): Promise<StoredSecret> {
  checkName(name);
  const fields = options.fields ?? {};
  const connection = existsSync(connectionFile(paths, name));
  const present = existsSync(vaultFile(paths.vault, name));
  // a sealed file the key does not open throws here: nothing is asked for, nothing dropped
  const held = storedFields(paths, name);
  const field = connection ? secretFieldOf(paths, name) : HOST_SECRET_FIELD;
  if (!connection && !present && !Object.keys(fields).length)
    throw new RosterError(
      `no connection named "${name}" (connections/${name}.toml) and no vault credential "${name}"; nothing stored`,
      {
        exitCode: 2,
        hint: `for a credential of a user and a password (the parent proxy's upstream_proxy_auth, SMTP's), give the user: roster connection secret ${name} --field user=…; the password is read as the secret`,
      },
    );
  if (!connection && present && held[HOST_SECRET_FIELD] === undefined)
    throw new RosterError(
      `the vault credential "${name}" is no connection's and holds no ${HOST_SECRET_FIELD} field (it holds ${Object.keys(held).join(", ") || "nothing readable"}); nothing stored`,
      { exitCode: 2, hint: `roster login ${name} replaces a model key` },
    );
  for (const given of Object.keys(fields))
    if (!FIELD.test(given) || given === field)
      throw new RosterError(
        `--field ${given}: a field is lower-case letters, digits or '_', and not "${field}" (that is the secret, never on the command line)`,
        { exitCode: 2 },
      );
  const value = await secret({ field, connection });
  // fields stored beside the secret before (a bot's owner_id, SMTP's host) stay unless given anew
  const credential = { ...held, ...fields, [field]: value };
  await storeCredential(paths.vault, name, credential, {
    command: "connection secret",
    ...options.origin,
  });
  return {
    file: vaultFile(paths.vault, name),
    field,
    beside: Object.keys(credential).filter((key) => key !== field),
    connection,
  };
}
