//! Geohash arithmetic for the geo commands (a geo set is a sorted set whose
//! scores are 52-bit interleaved geohashes, as Redis stores it).
//!
//! A position is encoded at 26 steps: latitude in `[-85.05112878,
//! 85.05112878]` and longitude in `[-180, 180]` are each scaled to a 26-bit
//! integer; latitude bits go to the even bit positions and longitude bits
//! to the odd ones. Decoding returns the centre of the cell. Searches cover
//! a circle or a box with the cell containing the centre and its eight
//! neighbours at a step chosen from the radius, then filter every candidate
//! by its exact distance (haversine, Earth radius 6372797.560856 m).

/// Longitude range.
pub const LONG_MIN: f64 = -180.0;
pub const LONG_MAX: f64 = 180.0;
/// Latitude range (the Web Mercator limits).
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;
/// Steps of a stored score (26 bits per coordinate, 52 bits in all).
pub const STEP_MAX: u8 = 26;
/// Earth radius in metres used by every distance.
pub const EARTH_RADIUS: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;

/// A coordinate interval.
#[derive(Debug, Clone, Copy)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

/// An interleaved hash at some precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bits {
    pub bits: u64,
    pub step: u8,
}

impl Bits {
    fn is_zero(&self) -> bool {
        self.bits == 0 && self.step == 0
    }
}

/// The cell of a hash.
#[derive(Debug, Clone, Copy)]
pub struct Area {
    pub longitude: Range,
    pub latitude: Range,
}

const WGS84_LONG: Range = Range { min: LONG_MIN, max: LONG_MAX };
const WGS84_LAT: Range = Range { min: LAT_MIN, max: LAT_MAX };

fn deg_rad(a: f64) -> f64 {
    a * (std::f64::consts::PI / 180.0)
}

fn rad_deg(a: f64) -> f64 {
    a / (std::f64::consts::PI / 180.0)
}

/// Spreads the 32 bits of `v` to the even bit positions.
fn spread(v: u32) -> u64 {
    let mut x = u64::from(v);
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// Gathers the even bit positions of `x` into 32 bits.
fn squash(x: u64) -> u32 {
    let mut x = x & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x >> 16)) & 0x0000_0000_FFFF_FFFF;
    x as u32
}

/// Encodes a position at `step` within the given ranges; `None` outside them.
pub fn encode(long_range: Range, lat_range: Range, longitude: f64, latitude: f64, step: u8) -> Option<Bits> {
    if !(LONG_MIN..=LONG_MAX).contains(&longitude) || !(LAT_MIN..=LAT_MAX).contains(&latitude) {
        return None;
    }
    if latitude < lat_range.min || latitude > lat_range.max || longitude < long_range.min || longitude > long_range.max
    {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (latitude - lat_range.min) / (lat_range.max - lat_range.min) * scale;
    let long_offset = (longitude - long_range.min) / (long_range.max - long_range.min) * scale;
    // C's double → uint32_t conversion (truncation; in range here).
    let bits = spread(lat_offset as u32) | (spread(long_offset as u32) << 1);
    Some(Bits { bits, step })
}

/// Encodes a position on the WGS84 ranges.
pub fn encode_wgs84(longitude: f64, latitude: f64, step: u8) -> Option<Bits> {
    encode(WGS84_LONG, WGS84_LAT, longitude, latitude, step)
}

/// The score stored for a position (26 steps).
pub fn score_of(longitude: f64, latitude: f64) -> Option<f64> {
    encode_wgs84(longitude, latitude, STEP_MAX).map(|h| align52(h) as f64)
}

/// A hash shifted to 52 bits (the score unit).
pub fn align52(h: Bits) -> u64 {
    h.bits << (52 - u32::from(h.step) * 2)
}

/// The cell of `hash` within the given ranges.
pub fn decode(long_range: Range, lat_range: Range, hash: Bits) -> Area {
    let ilat = squash(hash.bits);
    let ilon = squash(hash.bits >> 1);
    let div = (1u64 << hash.step) as f64;
    let lat_scale = lat_range.max - lat_range.min;
    let long_scale = long_range.max - long_range.min;
    Area {
        latitude: Range {
            min: lat_range.min + (f64::from(ilat) / div) * lat_scale,
            max: lat_range.min + (f64::from(ilat.wrapping_add(1)) / div) * lat_scale,
        },
        longitude: Range {
            min: long_range.min + (f64::from(ilon) / div) * long_scale,
            max: long_range.min + (f64::from(ilon.wrapping_add(1)) / div) * long_scale,
        },
    }
}

fn decode_wgs84(hash: Bits) -> Area {
    decode(WGS84_LONG, WGS84_LAT, hash)
}

/// C's `(uint64_t)` conversion of a double as x86-64 compiles it:
/// `cvttsd2si`, whose out-of-range result is `0x8000000000000000`, with
/// values from 2^63 up converted after subtracting 2^63 (scores that are
/// not geohashes decode the way Redis decodes them).
fn c_u64(x: f64) -> u64 {
    const TWO63: f64 = 9_223_372_036_854_775_808.0;
    const INDEFINITE: u64 = 0x8000_0000_0000_0000;
    let cvt = |v: f64| if (-TWO63..TWO63).contains(&v) { v as i64 as u64 } else { INDEFINITE };
    if x < TWO63 {
        cvt(x)
    } else {
        cvt(x - TWO63) ^ INDEFINITE
    }
}

/// `[longitude, latitude]` of a stored score (the centre of its cell).
pub fn decode_score(score: f64) -> [f64; 2] {
    let bits = c_u64(score);
    let area = decode_wgs84(Bits { bits, step: STEP_MAX });
    let lon = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    [lon, lat]
}

/// The 11-character standard geohash of a stored score (re-encoded on the
/// standard ±90 latitude range; the 11th character is always `0`).
pub fn geohash_string(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let [lon, lat] = decode_score(score);
    let hash =
        encode(Range { min: -180.0, max: 180.0 }, Range { min: -90.0, max: 90.0 }, lon, lat, 26).unwrap_or_default();
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        let idx = (hash.bits >> (52 - (i + 1) * 5)) & 0x1f;
        *c = ALPHABET[idx as usize];
    }
    out
}

fn move_x(h: &mut Bits, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - u32::from(h.step) * 2;
    let mut x = h.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let y = h.bits & 0x5555_5555_5555_5555;
    let zz = 0x5555_5555_5555_5555u64.checked_shr(shift).unwrap_or(0);
    if d > 0 {
        x = x.wrapping_add(zz + 1);
    } else {
        x |= zz;
        x = x.wrapping_sub(zz + 1);
    }
    x &= 0xaaaa_aaaa_aaaa_aaaau64.checked_shr(shift).unwrap_or(0);
    h.bits = x | y;
}

fn move_y(h: &mut Bits, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - u32::from(h.step) * 2;
    let x = h.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let mut y = h.bits & 0x5555_5555_5555_5555;
    let zz = 0xaaaa_aaaa_aaaa_aaaau64.checked_shr(shift).unwrap_or(0);
    if d > 0 {
        y = y.wrapping_add(zz + 1);
    } else {
        y |= zz;
        y = y.wrapping_sub(zz + 1);
    }
    y &= 0x5555_5555_5555_5555u64.checked_shr(shift).unwrap_or(0);
    h.bits = x | y;
}

fn moved(h: Bits, dx: i8, dy: i8) -> Bits {
    let mut n = h;
    move_x(&mut n, dx);
    move_y(&mut n, dy);
    n
}

/// Latitude-only distance in metres.
pub fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// Haversine distance in metres.
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let lon1r = deg_rad(lon1);
    let lon2r = deg_rad(lon2);
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let lat1r = deg_rad(lat1);
    let lat2r = deg_rad(lat2);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS * a.sqrt().asin()
}

/// The area searched: a circle (radius) or a box (width, height), both in
/// the unit given by `conversion` (metres per unit).
#[derive(Debug, Clone, Copy)]
pub enum ShapeKind {
    Radius(f64),
    Box { width: f64, height: f64 },
}

/// A search shape around `xy` (`[longitude, latitude]`).
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub xy: [f64; 2],
    pub conversion: f64,
    pub kind: ShapeKind,
}

impl Shape {
    /// The distance in metres from the centre if `(lon, lat)` is inside.
    pub fn contains(&self, lon: f64, lat: f64) -> Option<f64> {
        let [x1, y1] = self.xy;
        match self.kind {
            ShapeKind::Radius(r) => {
                let d = distance(x1, y1, lon, lat);
                (d <= r * self.conversion).then_some(d)
            }
            ShapeKind::Box { width, height } => {
                let (w, h) = (width * self.conversion, height * self.conversion);
                if lat_distance(lat, y1) > h / 2.0 {
                    return None;
                }
                if distance(lon, lat, x1, lat) > w / 2.0 {
                    return None;
                }
                Some(distance(x1, y1, lon, lat))
            }
        }
    }

    /// `[min_lon, min_lat, max_lon, max_lat]` around the shape.
    fn bounding_box(&self) -> [f64; 4] {
        let [lon, lat] = self.xy;
        let (height, width) = match self.kind {
            ShapeKind::Radius(r) => (r * self.conversion, r * self.conversion),
            ShapeKind::Box { width, height } => (height / 2.0 * self.conversion, width / 2.0 * self.conversion),
        };
        let lat_delta = rad_deg(height / EARTH_RADIUS);
        let long_delta_top = rad_deg(width / EARTH_RADIUS / deg_rad(lat + lat_delta).cos());
        let long_delta_bottom = rad_deg(width / EARTH_RADIUS / deg_rad(lat - lat_delta).cos());
        let south = lat < 0.0;
        let delta = if south { long_delta_bottom } else { long_delta_top };
        [lon - delta, lat - lat_delta, lon + delta, lat + lat_delta]
    }

    /// The radius used to pick the step: the circle's, or half the box's
    /// diagonal, in metres.
    fn radius_meters(&self) -> f64 {
        let r = match self.kind {
            ShapeKind::Radius(r) => r,
            ShapeKind::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        };
        r * self.conversion
    }
}

/// The step whose cells are about as large as the radius.
fn estimate_steps(range_meters: f64, lat: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut range = range_meters;
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// The cells to scan for a shape, in scanning order: the centre cell, then
/// north, south, east, west, north-east, north-west, south-east,
/// south-west; `None` for neighbours the shape cannot reach.
pub fn search_cells(shape: &Shape) -> [Option<Bits>; 9] {
    let [min_lon, min_lat, max_lon, max_lat] = shape.bounding_box();
    let [longitude, latitude] = shape.xy;
    let mut steps = estimate_steps(shape.radius_meters(), latitude);
    let build = |steps: u8| {
        let hash = encode_wgs84(longitude, latitude, steps).unwrap_or(Bits { bits: 0, step: steps });
        let n = [
            moved(hash, 0, 1),   // north
            moved(hash, 0, -1),  // south
            moved(hash, 1, 0),   // east
            moved(hash, -1, 0),  // west
            moved(hash, 1, 1),   // north-east
            moved(hash, -1, 1),  // north-west
            moved(hash, 1, -1),  // south-east
            moved(hash, -1, -1), // south-west
        ];
        (hash, n, decode_wgs84(hash))
    };
    let (mut hash, mut n, mut area) = build(steps);
    let north = decode_wgs84(n[0]);
    let south = decode_wgs84(n[1]);
    let east = decode_wgs84(n[2]);
    let west = decode_wgs84(n[3]);
    let decrease = north.latitude.max < max_lat
        || south.latitude.min > min_lat
        || east.longitude.max < max_lon
        || west.longitude.min > min_lon;
    if steps > 1 && decrease {
        steps -= 1;
        (hash, n, area) = build(steps);
    }
    let mut keep = [true; 8];
    if steps >= 2 {
        // Indices: 0 N, 1 S, 2 E, 3 W, 4 NE, 5 NW, 6 SE, 7 SW.
        if area.latitude.min < min_lat {
            for i in [1, 7, 6] {
                keep[i] = false;
            }
        }
        if area.latitude.max > max_lat {
            for i in [0, 4, 5] {
                keep[i] = false;
            }
        }
        if area.longitude.min < min_lon {
            for i in [3, 7, 5] {
                keep[i] = false;
            }
        }
        if area.longitude.max > max_lon {
            for i in [2, 6, 4] {
                keep[i] = false;
            }
        }
    }
    let mut out = [Some(hash); 9];
    for i in 0..8 {
        out[i + 1] = (keep[i] && !n[i].is_zero()).then_some(n[i]);
    }
    if hash.is_zero() {
        out[0] = None;
    }
    out
}

/// The score interval `[min, max)` covered by a cell.
pub fn score_range(h: Bits) -> (f64, f64) {
    let min = align52(h);
    let max = align52(Bits { bits: h.bits.wrapping_add(1), step: h.step });
    (min as f64, max as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palermo_matches_redis() {
        // Values read from redis-server 7.0: GEOADD Sicily 13.361389 38.115556 Palermo.
        let s = score_of(13.361389, 38.115556).unwrap();
        assert_eq!(s, 3479099956230698.0);
        assert_eq!(&geohash_string(s), b"sqc8b49rny0");
        let [lon, lat] = decode_score(s);
        assert_eq!(crate::num::fmt_human_double(lon), "13.36138933897018433");
        assert_eq!(crate::num::fmt_human_double(lat), "38.11555639549629859");
    }

    #[test]
    fn interleave_roundtrip() {
        for v in [0u32, 1, 0xffff_ffff, 0x1234_5678] {
            assert_eq!(squash(spread(v)), v);
        }
    }
}
