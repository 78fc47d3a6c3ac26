/*
 * Helpers of the script sandbox that need nothing of the host: the UTF-8 `TextEncoder` and
 * `TextDecoder` scripts get, `atob`/`btoa`, `URLSearchParams`, the console's formatting of values,
 * and the deep equality of `assert.deepEqual`. Evaluated in each run's context (a script, not a module: its value is the
 * object of helpers) before `sandboxBootstrap.js`, which receives that object; so everything here
 * belongs to the sandbox's realm, built from intrinsics taken before script code runs.
 */
(function library() {
  "use strict"
  const ErrorCtor = Error
  const TypeErrorCtor = TypeError
  const PromiseCtor = Promise
  const MapCtor = Map
  const SetCtor = Set
  const DateCtor = Date
  const RegExpCtor = RegExp
  const U8 = Uint8Array
  const ArrayBufferCtor = ArrayBuffer
  const jsonStringify = JSON.stringify
  const apply = Reflect.apply
  const ownKeys = Reflect.ownKeys
  const keys = Object.keys
  const freeze = Object.freeze
  const getPrototypeOf = Object.getPrototypeOf
  const isArray = Array.isArray
  const isView = ArrayBuffer.isView
  const objectIs = Object.is
  const fromCharCode = String.fromCharCode
  const stringOf = String
  const mapGet = Map.prototype.get
  const mapHas = Map.prototype.has
  const iteratorSymbol = Symbol.iterator
  const toStringTagSymbol = Symbol.toStringTag

  /** Bytes as a Uint8Array over the same memory, whatever view or buffer holds them; else undefined. */
  const asBytes = (value) =>
    value instanceof U8 ? value
    : value instanceof ArrayBufferCtor ? new U8(value)
    : isView(value) ? new U8(value.buffer, value.byteOffset, value.byteLength)
    : undefined

  // ---- a value as the console shows it
  const inspect = (value, depth, seen) => {
    switch (typeof value) {
      case "string": return depth === 0 ? value : jsonStringify(value)
      case "bigint": return `${value}n`
      case "symbol": return value.toString()
      case "function": return `[Function ${value.name || "(anonymous)"}]`
      case "object": break
      default: return stringOf(value)
    }
    if (value === null) return "null"
    if (seen.indexOf(value) >= 0) return "[Circular]"
    if (value instanceof ErrorCtor) return depth === 0 && typeof value.stack === "string" ? value.stack : `[${value.name}: ${value.message}]`
    if (value instanceof DateCtor) return value.toISOString()
    if (value instanceof RegExpCtor) return stringOf(value)
    if (value instanceof PromiseCtor) return "Promise {}"
    const nested = [...seen, value]
    const item = (v) => depth >= 3 ? (typeof v === "object" && v !== null ? "[Object]" : inspect(v, depth + 1, nested)) : inspect(v, depth + 1, nested)
    const list = (items, open, close) => items.length === 0 ? `${open}${close}` : `${open} ${items.join(", ")} ${close}`
    const array = asBytes(value)
    if (array !== undefined) {
      const shown = []
      for (let i = 0; i < array.length && i < 50; i++) shown.push(stringOf(array[i]))
      if (array.length > 50) shown.push(`... ${array.length - 50} more`)
      return `${value.constructor === U8 ? "Uint8Array" : "bytes"}(${array.length}) ${list(shown, "[", "]")}`
    }
    if (isArray(value)) {
      const shown = []
      for (let i = 0; i < value.length && i < 100; i++) shown.push(item(value[i]))
      if (value.length > 100) shown.push(`... ${value.length - 100} more`)
      return list(shown, "[", "]")
    }
    if (value instanceof MapCtor) return `Map(${value.size}) ${list([...value].slice(0, 100).map(([k, v]) => `${item(k)} => ${item(v)}`), "{", "}")}`
    if (value instanceof SetCtor) return `Set(${value.size}) ${list([...value].slice(0, 100).map(item), "{", "}")}`
    const names = keys(value)
    const shown = names.slice(0, 100).map((name) => `${/^[A-Za-z_$][\w$]*$/.test(name) ? name : jsonStringify(name)}: ${item(value[name])}`)
    if (names.length > 100) shown.push(`... ${names.length - 100} more`)
    return list(shown, "{", "}")
  }
  const describe = (value) => {
    try {
      return inspect(value, 0, [])
    } catch {
      return "[a value that cannot be shown]"
    }
  }

  // ---- UTF-8
  class TextEncoder {
    get encoding() { return "utf-8" }
    encode(text = "") {
      const source = stringOf(text)
      const out = []
      for (let i = 0; i < source.length; i++) {
        let code = source.charCodeAt(i)
        if (code >= 0xd800 && code <= 0xdbff && i + 1 < source.length) {
          const low = source.charCodeAt(i + 1)
          if (low >= 0xdc00 && low <= 0xdfff) {
            code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00)
            i++
          }
        }
        if (code >= 0xd800 && code <= 0xdfff) code = 0xfffd
        if (code < 0x80) out.push(code)
        else if (code < 0x800) out.push(0xc0 | (code >> 6), 0x80 | (code & 63))
        else if (code < 0x10000) out.push(0xe0 | (code >> 12), 0x80 | ((code >> 6) & 63), 0x80 | (code & 63))
        else out.push(0xf0 | (code >> 18), 0x80 | ((code >> 12) & 63), 0x80 | ((code >> 6) & 63), 0x80 | (code & 63))
      }
      return new U8(out)
    }
  }
  class TextDecoder {
    get encoding() { return "utf-8" }
    decode(input) {
      const bytes = input === undefined ? new U8(0) : asBytes(input)
      if (bytes === undefined) throw new TypeErrorCtor("TextDecoder.decode needs bytes")
      let out = ""
      let chunk = []
      let i = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0
      const continuation = (at) => at < bytes.length && (bytes[at] & 0xc0) === 0x80
      while (i < bytes.length) {
        const first = bytes[i]
        const size = first < 0x80 ? 1 : first >= 0xc2 && first < 0xe0 ? 2 : first >= 0xe0 && first < 0xf0 ? 3 : first >= 0xf0 && first < 0xf5 ? 4 : 0
        let ok = size > 0
        for (let k = 1; ok && k < size; k++) ok = continuation(i + k)
        let code = 0xfffd
        if (ok) {
          code = size === 1 ? first : first & (0xff >> (size + 1))
          for (let k = 1; k < size; k++) code = (code << 6) | (bytes[i + k] & 63)
          if ((size === 3 && (code < 0x800 || (code >= 0xd800 && code <= 0xdfff))) || (size === 4 && (code < 0x10000 || code > 0x10ffff))) ok = false
        }
        if (!ok) code = 0xfffd
        i += ok ? size : 1
        if (code >= 0x10000) chunk.push(0xd800 + ((code - 0x10000) >> 10), 0xdc00 + ((code - 0x10000) & 1023))
        else chunk.push(code)
        if (chunk.length >= 8192) {
          out += apply(fromCharCode, undefined, chunk)
          chunk = []
        }
      }
      return out + apply(fromCharCode, undefined, chunk)
    }
  }

  // ---- base64 (latin1 strings, as the web's atob/btoa)
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
  const invalidCharacter = (message) => {
    const error = new ErrorCtor(message)
    error.name = "InvalidCharacterError"
    return error
  }
  const btoa = (data) => {
    const text = stringOf(data)
    let out = ""
    for (let i = 0; i < text.length; i += 3) {
      const a = text.charCodeAt(i)
      const b = i + 1 < text.length ? text.charCodeAt(i + 1) : 0
      const c = i + 2 < text.length ? text.charCodeAt(i + 2) : 0
      if (a > 255 || b > 255 || c > 255) throw invalidCharacter("btoa takes latin1 text (each character a byte): encode other text to bytes first")
      const n = (a << 16) | (b << 8) | c
      out += alphabet[n >> 18] + alphabet[(n >> 12) & 63] +
        (i + 1 < text.length ? alphabet[(n >> 6) & 63] : "=") + (i + 2 < text.length ? alphabet[n & 63] : "=")
    }
    return out
  }
  const atob = (data) => {
    let text = stringOf(data).replace(/[\t\n\f\r ]+/g, "")
    if (text.length % 4 === 0) text = text.replace(/={1,2}$/, "")
    if (text.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(text)) throw invalidCharacter("atob takes base64 text, and this is not")
    let out = ""
    let bits = 0
    let count = 0
    for (let i = 0; i < text.length; i++) {
      bits = (bits << 6) | alphabet.indexOf(text[i])
      count += 6
      if (count >= 8) {
        count -= 8
        out += fromCharCode((bits >> count) & 255)
      }
    }
    return out
  }

  // ---- application/x-www-form-urlencoded, as the web's URLSearchParams
  const formEncode = (text) => {
    const bytes = new TextEncoder().encode(text)
    let out = ""
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i]
      const plain = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b === 0x2a || b === 0x2d || b === 0x2e || b === 0x5f
      out += plain ? fromCharCode(b) : b === 0x20 ? "+" : `%${b < 16 ? "0" : ""}${b.toString(16).toUpperCase()}`
    }
    return out
  }
  const hexValue = (b) => b >= 0x30 && b <= 0x39 ? b - 0x30 : (b | 0x20) >= 0x61 && (b | 0x20) <= 0x66 ? (b | 0x20) - 0x57 : -1
  /** Percent-decodes the UTF-8 bytes of the text (no "%" or hex digit is part of a longer UTF-8 sequence). */
  const formDecode = (text) => {
    const bytes = new TextEncoder().encode(text.replace(/\+/g, " "))
    const out = new U8(bytes.length)
    let length = 0
    for (let i = 0; i < bytes.length; i++) {
      const high = bytes[i] === 0x25 && i + 2 < bytes.length ? hexValue(bytes[i + 1]) : -1
      const low = high < 0 ? -1 : hexValue(bytes[i + 2])
      if (low < 0) out[length++] = bytes[i]
      else {
        out[length++] = high * 16 + low
        i += 2
      }
    }
    return new TextDecoder().decode(out.subarray(0, length))
  }
  class URLSearchParams {
    #pairs = []
    constructor(init = "") {
      if (typeof init === "object" && init !== null) {
        if (typeof init[iteratorSymbol] === "function") {
          for (const pair of init) {
            const items = [...pair]
            if (items.length !== 2) throw new TypeErrorCtor("URLSearchParams takes pairs of [name, value]")
            this.#pairs.push([stringOf(items[0]), stringOf(items[1])])
          }
        } else {
          for (const name of keys(init)) this.#pairs.push([name, stringOf(init[name])])
        }
        return
      }
      const text = stringOf(init)
      for (const part of (text.startsWith("?") ? text.slice(1) : text).split("&")) {
        if (part === "") continue
        const at = part.indexOf("=")
        this.#pairs.push(at < 0 ? [formDecode(part), ""] : [formDecode(part.slice(0, at)), formDecode(part.slice(at + 1))])
      }
    }
    get size() { return this.#pairs.length }
    append(name, value) { this.#pairs.push([stringOf(name), stringOf(value)]) }
    delete(name, value) {
      this.#pairs = this.#pairs.filter(([n, v]) => n !== stringOf(name) || (value !== undefined && v !== stringOf(value)))
    }
    get(name) {
      const pair = this.#pairs.find(([n]) => n === stringOf(name))
      return pair === undefined ? null : pair[1]
    }
    getAll(name) { return this.#pairs.filter(([n]) => n === stringOf(name)).map(([, v]) => v) }
    has(name, value) { return this.#pairs.some(([n, v]) => n === stringOf(name) && (value === undefined || v === stringOf(value))) }
    set(name, value) {
      const key = stringOf(name)
      const at = this.#pairs.findIndex(([n]) => n === key)
      if (at < 0) {
        this.#pairs.push([key, stringOf(value)])
        return
      }
      this.#pairs[at] = [key, stringOf(value)]
      this.#pairs = this.#pairs.filter(([n], i) => n !== key || i === at)
    }
    sort() {
      // Stable, by UTF-16 code units, as the standard says.
      this.#pairs = this.#pairs.map((pair, i) => [pair, i]).sort(([a, i], [b, k]) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : i - k).map(([pair]) => pair)
    }
    forEach(callback, thisArg) {
      for (const [name, value] of this.#pairs) apply(callback, thisArg, [value, name, this])
    }
    *entries() { for (const [name, value] of this.#pairs) yield [name, value] }
    *keys() { for (const [name] of this.#pairs) yield name }
    *values() { for (const [, value] of this.#pairs) yield value }
    [iteratorSymbol]() { return this.entries() }
    toString() { return this.#pairs.map(([name, value]) => `${formEncode(name)}=${formEncode(value)}`).join("&") }
    get [toStringTagSymbol]() { return "URLSearchParams" }
  }

  // ---- structural equality (assert.deepEqual)
  const deepEqual = (a, b, seen) => {
    if (objectIs(a, b) || (a === b)) return true
    if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false
    if (getPrototypeOf(a) !== getPrototypeOf(b)) return false
    if (seen.indexOf(a) >= 0) return true
    const nested = [...seen, a]
    if (a instanceof DateCtor) return a.getTime() === b.getTime()
    if (a instanceof RegExpCtor) return stringOf(a) === stringOf(b)
    if (a instanceof MapCtor) {
      if (a.size !== b.size) return false
      for (const [k, v] of a) if (!apply(mapHas, b, [k]) || !deepEqual(v, apply(mapGet, b, [k]), nested)) return false
      return true
    }
    if (a instanceof SetCtor) {
      if (a.size !== b.size) return false
      for (const v of a) if (!b.has(v)) return false
      return true
    }
    const aKeys = ownKeys(a).filter((k) => k !== "length" || !isArray(a))
    const bKeys = ownKeys(b).filter((k) => k !== "length" || !isArray(b))
    if (isView(a) ? a.length !== b.length : aKeys.length !== bKeys.length) return false
    if (isView(a)) {
      for (let i = 0; i < a.length; i++) if (!objectIs(a[i], b[i])) return false
      return true
    }
    for (const k of aKeys) if (!bKeys.includes(k) || !deepEqual(a[k], b[k], nested)) return false
    return true
  }

  return freeze({ __proto__: null, asBytes, describe, deepEqual, TextEncoder, TextDecoder, atob, btoa, URLSearchParams })
})()
