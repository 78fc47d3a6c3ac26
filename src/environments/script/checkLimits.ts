/** The bounds of a script's check, shared by the check, the compiling threads and the docs the model reads. */

/**
 * The longest line a script may have. esbuild sends each problem it finds with its whole line: a
 * line of 30,000 problems (`--1;` repeated) is 120,000 characters sent 30,000 times, gigabytes
 * (minutes, or the compiling thread's heap). Lines this long are data, which a JSON file holds better.
 */
export const maxLineLength = 10_000

/** The most problems a refusal lists (and a compile sends back): a script can have thousands (one per statement), each quoting its line. */
export const maxProblems = 10
