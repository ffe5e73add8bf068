// GitHub Actions expressions (`${{ … }}`, `if:`) evaluated by GitHub's own implementation
// (@actions/expressions, from actions/languageservices), so a workflow test says what GitHub
// would compute for an event rather than what we think it would.
import { data, Evaluator, Lexer, Parser } from "@actions/expressions";
import { truthy } from "@actions/expressions/result";

export type Contexts = Record<string, unknown>;

/** The run's state for the status function cancelled(), which the runner, not the expression library, knows. */
export interface RunState {
  cancelled: boolean;
}

function evaluate(expression: string, contexts: Contexts, run: RunState = { cancelled: false }): data.ExpressionData {
  const { tokens } = new Lexer(expression).lex();
  const cancelled = { name: "cancelled", minArgs: 0, maxArgs: 0, call: () => new data.BooleanData(run.cancelled) };
  const expr = new Parser(tokens, Object.keys(contexts), [cancelled]).parse();
  const dictionary = JSON.parse(JSON.stringify(contexts), data.reviver) as data.Dictionary;
  return new Evaluator(expr, dictionary, new Map([["cancelled", cancelled]])).evaluate();
}

/** A job's or step's `if:` (with or without `${{ }}`), as true or false. */
export function condition(text: string, contexts: Contexts, run?: RunState): boolean {
  const m = /^\s*\$\{\{([\s\S]*)\}\}\s*$/.exec(text);
  return truthy(evaluate(m ? m[1]! : text, contexts, run));
}

/** A string with `${{ }}` parts (a concurrency group, a with: value), as GitHub renders it. */
export function render(text: string, contexts: Contexts): string {
  return text.replace(/\$\{\{([\s\S]*?)\}\}/g, (_, e: string) => evaluate(e, contexts).coerceString());
}
