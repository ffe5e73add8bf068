import { run } from "./main";

await run();
