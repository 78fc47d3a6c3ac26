/**
 * The images a vision model is shown: the types such models take, up to their size limit. An
 * environment's `view_image` and an MCP tool's image content follow the same rules.
 */

/** The media types vision models take. */
export const viewableImageTypes: ReadonlySet<string> = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"])

/** Those types as a person names them. */
export const viewableImageNames = "PNG, JPEG, GIF or WebP"

/** The largest image, in bytes, a model is shown. */
export const maxImageBytes = 4_000_000
