// A file's text, imported as `…?raw`: Vite (the tests) reads it so; scripts/build.mjs gives
// esbuild the same rule. The history page inlines uPlot and its own script this way.
declare module "*?raw" {
  const text: string;
  export default text;
}
