/**
 * Message components for the Discord stand-in (discord-stand-in.ts): the
 * action rows of buttons a bot attaches to a message, read from a request
 * body and stored the way Discord stores them — each component given a
 * numeric `id` in document order when the body left it out — or refused with
 * the field Discord would name in its "Invalid Form Body" error. The double
 * takes action rows of buttons only, the part roster uses.
 */
import {
  type APIActionRowComponent,
  type APIButtonComponent,
  type APIButtonComponentWithCustomId,
  type APIMessage,
  ButtonStyle,
  ComponentType,
} from "discord-api-types/v10";
import { contentError, type FieldError } from "./discord-http.ts";

export type ButtonRow = APIActionRowComponent<APIButtonComponent>;

/** Discord's limits: rows per message, buttons per row, and the lengths of a button's strings. */
const MAX_ROWS = 5;
const MAX_BUTTONS = 5;
const MAX_CUSTOM_ID = 100;
const MAX_LABEL = 80;
/** The styles of a button that sends an interaction (Link opens a URL; Premium, an SKU, isn't spoken here). */
const CUSTOM_ID_STYLES = [
  ButtonStyle.Primary,
  ButtonStyle.Secondary,
  ButtonStyle.Success,
  ButtonStyle.Danger,
] as const;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const maxLength = (field: string, max: number): FieldError => ({
  field,
  code: "BASE_TYPE_MAX_LENGTH",
  message: `Must be ${max} or fewer in length.`,
});

const required = (field: string): FieldError => ({
  field,
  code: "BASE_TYPE_REQUIRED",
  message: "This field is required",
});

/** Hands out component ids the way Discord does: 1, 2, 3 … in order, skipping ones the body set. */
class ComponentIds {
  private next = 1;

  constructor(private readonly taken: Set<number>) {}

  assign(given: unknown): number {
    if (typeof given === "number" && Number.isInteger(given) && given > 0) return given;
    while (this.taken.has(this.next)) this.next += 1;
    this.taken.add(this.next);
    return this.next;
  }
}

/** Every id a body set on a component itself, so the generated ones don't collide with them. */
function givenIds(rows: unknown[]): Set<number> {
  const ids = new Set<number>();
  const add = (value: unknown) => {
    if (isRecord(value) && typeof value.id === "number") ids.add(value.id);
  };
  for (const row of rows) {
    add(row);
    if (isRecord(row) && Array.isArray(row.components)) row.components.forEach(add);
  }
  return ids;
}

/**
 * A message body's `components` as Discord stores them, or the field it
 * refuses. Absent or null means none.
 */
export function messageComponents(value: unknown): ButtonRow[] | FieldError {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    return { field: "components", code: "BASE_TYPE_ARRAY", message: "Must be an array." };
  }
  if (value.length > MAX_ROWS) return maxLength("components", MAX_ROWS);
  const ids = new ComponentIds(givenIds(value));
  const customIds = new Set<string>();
  const rows: ButtonRow[] = [];
  for (const [r, row] of value.entries()) {
    const at = `components.${r}`;
    if (!isRecord(row) || row.type !== ComponentType.ActionRow) {
      return {
        field: `${at}.type`,
        code: "UNION_TYPE_CHOICES",
        message: 'Value of field "type" must be one of (1,).',
      };
    }
    const buttons = row.components;
    if (!Array.isArray(buttons) || buttons.length < 1 || buttons.length > MAX_BUTTONS) {
      return {
        field: `${at}.components`,
        code: "BASE_TYPE_BAD_LENGTH",
        message: `Must be between 1 and ${MAX_BUTTONS} in length.`,
      };
    }
    const id = ids.assign(row.id);
    const stored: APIButtonComponent[] = [];
    for (const [b, button] of buttons.entries()) {
      const parsed = readButton(button, `${at}.components.${b}`, ids, customIds);
      if ("field" in parsed) return parsed;
      stored.push(parsed);
    }
    rows.push({ type: ComponentType.ActionRow, id, components: stored });
  }
  return rows;
}

function readButton(
  button: unknown,
  at: string,
  ids: ComponentIds,
  customIds: Set<string>,
): APIButtonComponent | FieldError {
  if (!isRecord(button) || button.type !== ComponentType.Button) {
    return {
      field: `${at}.type`,
      code: "UNION_TYPE_CHOICES",
      message: 'Value of field "type" must be one of (2,).',
    };
  }
  const { style, label, emoji, disabled } = button;
  const customStyle = CUSTOM_ID_STYLES.find((known) => known === style);
  if (style !== ButtonStyle.Link && customStyle === undefined) {
    return {
      field: `${at}.style`,
      code: "BASE_TYPE_CHOICES",
      message: "Value must be one of {1, 2, 3, 4, 5}.",
    };
  }
  if (label !== undefined && (typeof label !== "string" || label.length > MAX_LABEL)) {
    return maxLength(`${at}.label`, MAX_LABEL);
  }
  const id = ids.assign(button.id);
  const common = {
    type: ComponentType.Button as const,
    id,
    ...(typeof label === "string" ? { label } : {}),
    ...(isRecord(emoji) ? { emoji } : {}),
    ...(typeof disabled === "boolean" ? { disabled } : {}),
  };
  if (customStyle === undefined) {
    if (typeof button.url !== "string" || !button.url) return required(`${at}.url`);
    return { ...common, style: ButtonStyle.Link, url: button.url };
  }
  const customId = button.custom_id;
  if (typeof customId !== "string" || !customId) return required(`${at}.custom_id`);
  if (customId.length > MAX_CUSTOM_ID) return maxLength(`${at}.custom_id`, MAX_CUSTOM_ID);
  if (customIds.has(customId)) {
    return {
      field: `${at}.custom_id`,
      code: "COMPONENT_CUSTOM_ID_DUPLICATED",
      message: "Component custom id cannot be duplicated",
    };
  }
  customIds.add(customId);
  return { ...common, style: customStyle, custom_id: customId };
}

/** The button with this custom_id on a stored message, if it has one. */
export function buttonOf(
  message: APIMessage,
  customId: string,
): APIButtonComponentWithCustomId | undefined {
  for (const row of message.components ?? []) {
    if (row.type !== ComponentType.ActionRow) continue;
    for (const component of row.components) {
      if (
        component.type === ComponentType.Button &&
        "custom_id" in component &&
        component.custom_id === customId
      ) {
        return component;
      }
    }
  }
  return undefined;
}

/**
 * A message body's content and components, or the field Discord refuses:
 * content may be empty only when components carry the message.
 */
export function messageBody(
  body: Record<string, unknown>,
): { content: string; components: ButtonRow[] } | FieldError {
  const content = typeof body.content === "string" ? body.content : "";
  const components = messageComponents(body.components);
  if (!Array.isArray(components)) return components;
  return contentError(content, components.length > 0) ?? { content, components };
}
