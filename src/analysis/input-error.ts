/** An input the analysis refuses, with a message that names the problem. */
export class AnalysisInputError extends Error {
  override name = "AnalysisInputError";
}
