/** Sizes as a model and a person read them: "812 B", "12.3 KB", "4.8 MB" (powers of 1000). */
export const formatBytes = (bytes: number): string => {
  if (bytes < 1000) return `${bytes} B`
  const units = ["KB", "MB", "GB", "TB"]
  let value = bytes / 1000
  let unit = 0
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000
    unit += 1
  }
  return `${value >= 100 ? Math.round(value) : Number(value.toFixed(1))} ${units[unit]}`
}
