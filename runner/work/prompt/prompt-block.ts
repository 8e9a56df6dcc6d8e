/** One labelled block of a compiled system prompt (compile.ts joins them; memory.ts and others make one). */
export interface PromptBlock {
  label: string;
  content: string;
}
