/**
 * A tool's answer that shows the model images (an MCP server's screenshot). The engine recognises
 * it whatever the tool: when every model of the run sees images, the tool message carries `images`
 * beside `content`; otherwise the model reads `withoutImages`. Events and the inspector show the
 * text only, as for an environment's `view_image`: the images live in the transcript.
 */
import { Schema } from "effect"
import { ImageContent } from "../models/Model.js"

/** Text and images for a model that sees, text alone for one that does not. */
export class AnswerWithImages extends Schema.TaggedClass<AnswerWithImages>()("AnswerWithImages", {
  /** What a model that sees reads beside the images: it names each, and says why one it is not given was left out. */
  content: Schema.String,
  images: Schema.Array(ImageContent),
  /** What a model that cannot see reads instead: each image described. */
  withoutImages: Schema.String
}) {}
