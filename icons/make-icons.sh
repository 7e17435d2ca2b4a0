#!/usr/bin/env bash
# Regenerates the app icon and the four tray badges (ImageMagick). The badges differ in
# shape as well as colour, so the state reads without colour vision:
#   healthy = circle, DEBT MED = triangle, DEBT HIGH = octagon with "!", error = square with "×".
set -euo pipefail
cd "$(dirname "$0")"
S=64
base() { convert -size ${S}x${S} xc:none "$@"; }
# A small graph glyph (three linked nodes) in the corner of every badge marks it as KG Memory.
glyph=(-stroke white -strokewidth 3 -draw "line 22,40 32,24" -draw "line 32,24 42,40" -fill white -draw "circle 22,40 22,44" -draw "circle 32,24 32,28" -draw "circle 42,40 42,44")
base -fill '#2e9d57' -stroke '#1b5e33' -strokewidth 2 -draw "circle 32,32 32,3" "${glyph[@]}" tray-healthy.png
base -fill '#e0a100' -stroke '#7a5800' -strokewidth 2 -draw "polygon 32,3 61,59 3,59" -fill black -stroke none -draw "rectangle 29,22 35,44" -draw "circle 32,51 32,54" tray-med.png
base -fill '#d03030' -stroke '#6e1010' -strokewidth 2 -draw "polygon 20,3 44,3 61,20 61,44 44,61 20,61 3,44 3,20" -fill white -stroke none -draw "rectangle 28,13 36,40" -draw "circle 32,49 32,53" tray-high.png
base -fill '#707070' -stroke '#303030' -strokewidth 2 -draw "rectangle 4,4 60,60" -stroke white -strokewidth 7 -draw "line 18,18 46,46" -draw "line 46,18 18,46" tray-error.png
convert -size 256x256 xc:none -fill '#2b5797' -draw "roundrectangle 8,8 248,248 40,40" \
  -stroke white -strokewidth 10 -draw "line 80,170 128,90" -draw "line 128,90 176,170" -draw "line 80,170 176,170" \
  -fill white -stroke none -draw "circle 80,170 80,192" -draw "circle 128,90 128,112" -draw "circle 176,170 176,192" icon.png
