//! Geo commands (Redis 7.0 `geo.c`). A geo set is a sorted set whose
//! scores are 52-bit geohashes (`db/geohash.rs`); `GEOADD` is `ZADD` with
//! the coordinates turned into scores (one implementation: it calls the
//! sorted-set code), and the searches scan the nine cells around the centre
//! and filter by exact distance.

use bytes::Bytes;

use super::util::{eq, int};
use super::zset::zadd_generic;
use super::{cmd, CommandSpec, Ctx};
use crate::db::geohash::{self, Shape, ShapeKind};
use crate::db::zset::{ScoreBound, ZSet};
use crate::db::{notify, own, Value};
use crate::error::{CmdError, CmdResult};
use crate::num;
use crate::protocol::Reply;

pub static COMMANDS: &[CommandSpec] = &[
    cmd("geoadd", geoadd, -5, "write denyoom", 1, 1, 1, "@write @geo @slow")
        .doc("Add one or more geospatial items in the geospatial index represented using a sorted set", "3.2.0"),
    cmd("geopos", geopos, -2, "readonly", 1, 1, 1, "@read @geo @slow")
        .doc("Returns longitude and latitude of members of a geospatial index", "3.2.0"),
    cmd("geodist", geodist, -4, "readonly", 1, 1, 1, "@read @geo @slow")
        .doc("Returns the distance between two members of a geospatial index", "3.2.0"),
    cmd("geohash", geohash_cmd, -2, "readonly", 1, 1, 1, "@read @geo @slow")
        .doc("Returns members of a geospatial index as standard geohash strings", "3.2.0"),
    cmd("georadius", georadius, -6, "write denyoom movablekeys", 1, 1, 1, "@write @geo @slow").doc(
        "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a point",
        "3.2.0",
    ),
    cmd("georadius_ro", georadius_ro, -6, "readonly", 1, 1, 1, "@read @geo @slow").doc(
        "A read-only variant for GEORADIUS",
        "3.2.10",
    ),
    cmd("georadiusbymember", georadiusbymember, -5, "write denyoom movablekeys", 1, 1, 1, "@write @geo @slow").doc(
        "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a member",
        "3.2.0",
    ),
    cmd("georadiusbymember_ro", georadiusbymember_ro, -5, "readonly", 1, 1, 1, "@read @geo @slow")
        .doc("A read-only variant for GEORADIUSBYMEMBER", "3.2.10"),
    cmd("geosearch", geosearch, -7, "readonly", 1, 1, 1, "@read @geo @slow").doc(
        "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle.",
        "6.2.0",
    ),
    cmd("geosearchstore", geosearchstore, -8, "write denyoom", 1, 2, 1, "@write @geo @slow").doc(
        "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle, and store the result in another key.",
        "6.2.0",
    ),
];

// ---------------------------------------------------------------------------
// Argument parsing

/// `[longitude, latitude]` from two arguments, range-checked.
fn long_lat(args: &[Bytes]) -> Result<[f64; 2], CmdError> {
    let lon = num::parse_double(&args[0]).ok_or(CmdError::NotFloat)?;
    let lat = num::parse_double(&args[1]).ok_or(CmdError::NotFloat)?;
    if !(geohash::LONG_MIN..=geohash::LONG_MAX).contains(&lon) || !(geohash::LAT_MIN..=geohash::LAT_MAX).contains(&lat)
    {
        return Err(CmdError::custom(format!("ERR invalid longitude,latitude pair {lon:.6},{lat:.6}")));
    }
    Ok([lon, lat])
}

/// Metres per unit (`m`, `km`, `ft`, `mi`, any letter case).
fn unit(arg: &[u8]) -> Result<f64, CmdError> {
    if eq(arg, "m") {
        Ok(1.0)
    } else if eq(arg, "km") {
        Ok(1000.0)
    } else if eq(arg, "ft") {
        Ok(0.3048)
    } else if eq(arg, "mi") {
        Ok(1609.34)
    } else {
        Err(CmdError::custom("ERR unsupported unit provided. please use M, KM, FT, MI"))
    }
}

fn numeric(arg: &[u8], what: &str) -> Result<f64, CmdError> {
    num::parse_double(arg).ok_or_else(|| CmdError::custom(format!("ERR need numeric {what}")))
}

/// `radius unit` → (radius, metres per unit).
fn radius_arg(args: &[Bytes]) -> Result<(f64, f64), CmdError> {
    let r = numeric(&args[0], "radius")?;
    if r < 0.0 {
        return Err(CmdError::custom("ERR radius cannot be negative"));
    }
    Ok((r, unit(&args[1])?))
}

/// `width height unit` → (width, height, metres per unit).
fn box_arg(args: &[Bytes]) -> Result<(f64, f64, f64), CmdError> {
    let w = numeric(&args[0], "width")?;
    let h = numeric(&args[1], "height")?;
    if h < 0.0 || w < 0.0 {
        return Err(CmdError::custom("ERR height or width cannot be negative"));
    }
    Ok((w, h, unit(&args[2])?))
}

/// A `%.4f` distance, a bulk string in both protocols (as Redis sends it).
fn distance_reply(d: f64) -> Reply {
    Reply::Bulk(Bytes::from(format!("{d:.4}")))
}

/// The coordinates of a member: `[longitude, latitude]`.
fn member_pos(z: &ZSet, member: &[u8]) -> Option<[f64; 2]> {
    z.score(member).map(geohash::decode_score)
}

/// Runs `f` on the geo set at `key` (`None` if missing); `WRONGTYPE` for
/// other types.
fn with_zset<R>(ctx: &mut Ctx<'_>, key: &[u8], f: impl FnOnce(Option<&ZSet>) -> R) -> Result<R, CmdError> {
    let mut db = ctx.db();
    match db.get(key) {
        None => Ok(f(None)),
        Some(Value::ZSet(z)) => Ok(f(Some(z))),
        Some(_) => Err(CmdError::WrongType),
    }
}

// ---------------------------------------------------------------------------
// Commands

fn geoadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut longidx = 2;
    let (mut nx, mut xx) = (false, false);
    while longidx < args.len() {
        let o = &args[longidx];
        if eq(o, "nx") {
            nx = true;
        } else if eq(o, "xx") {
            xx = true;
        } else if !eq(o, "ch") {
            break;
        }
        longidx += 1;
    }
    if !(args.len() - longidx).is_multiple_of(3) || (xx && nx) {
        return Err(CmdError::Syntax);
    }
    // ZADD key [options] score member ...: the coordinates become scores.
    let mut zargv: Vec<Bytes> = Vec::with_capacity(longidx + (args.len() - longidx) / 3 * 2);
    zargv.push(Bytes::from_static(b"zadd"));
    zargv.extend_from_slice(&args[1..longidx]);
    for triple in args[longidx..].chunks(3) {
        let [lon, lat] = long_lat(&triple[..2])?;
        let score = geohash::score_of(lon, lat).expect("range-checked");
        zargv.push(num::int_bytes(score as i64));
        zargv.push(triple[2].clone());
    }
    zadd_generic(ctx, &zargv, 0)
}

/// A coordinate as replied: 17 significant digits (`%.17Lg`) up to Redis
/// 7.4, a double in its shortest form from 8.0.
fn coord_reply(shortest: bool) -> fn(f64) -> Reply {
    if shortest {
        Reply::Double
    } else {
        Reply::HumanDouble
    }
}

fn geopos(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let coord = coord_reply(ctx.core.profile().at_least(8, 0, 0));
    with_zset(ctx, &args[1], |z| {
        let out = args[2..]
            .iter()
            .map(|m| match z.and_then(|z| member_pos(z, m)) {
                Some([lon, lat]) => Reply::Array(vec![coord(lon), coord(lat)]),
                None => Reply::NilArray,
            })
            .collect();
        Reply::Array(out)
    })
}

fn geodist(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let to_meter = match args.len() {
        5 => unit(&args[4])?,
        n if n > 5 => return Err(CmdError::Syntax),
        _ => 1.0,
    };
    with_zset(ctx, &args[1], |z| match z.map(|z| (member_pos(z, &args[2]), member_pos(z, &args[3]))) {
        Some((Some([x1, y1]), Some([x2, y2]))) => distance_reply(geohash::distance(x1, y1, x2, y2) / to_meter),
        _ => Reply::Nil,
    })
}

fn geohash_cmd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    with_zset(ctx, &args[1], |z| {
        let out = args[2..]
            .iter()
            .map(|m| match z.and_then(|z| z.score(m)) {
                Some(s) => Reply::Bulk(Bytes::copy_from_slice(&geohash::geohash_string(s))),
                None => Reply::Nil,
            })
            .collect();
        Reply::Array(out)
    })
}

const RADIUS_COORDS: u8 = 1;
const RADIUS_MEMBER: u8 = 2;
const NOSTORE: u8 = 4;
const SEARCH: u8 = 8;
const SEARCHSTORE: u8 = 16;

fn georadius(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    search_generic(ctx, args, 1, RADIUS_COORDS)
}

fn georadius_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    search_generic(ctx, args, 1, RADIUS_COORDS | NOSTORE)
}

fn georadiusbymember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    search_generic(ctx, args, 1, RADIUS_MEMBER)
}

fn georadiusbymember_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    search_generic(ctx, args, 1, RADIUS_MEMBER | NOSTORE)
}

fn geosearch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    search_generic(ctx, args, 1, SEARCH)
}

fn geosearchstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    search_generic(ctx, args, 2, SEARCH | SEARCHSTORE)
}

#[derive(Clone, Copy, PartialEq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// One match of a search.
struct Point {
    lon: f64,
    lat: f64,
    dist: f64,
    score: f64,
    member: Bytes,
}

/// Members of `z` in the cells of the shape, within the shape, in Redis's
/// scanning order; stops at `limit` matches when it is not 0 (`ANY`).
fn points_in_shape(z: &ZSet, shape: &Shape, limit: usize) -> Vec<Point> {
    let cells = geohash::search_cells(shape);
    let mut out = Vec::new();
    let mut last: Option<usize> = None;
    for (i, cell) in cells.iter().enumerate() {
        let Some(cell) = cell else { continue };
        // Huge radii make neighbours coincide: skip a cell equal to the
        // one scanned last (the centre cell excepted, as Redis does).
        if let Some(l) = last.filter(|&l| l != 0) {
            if cells[l] == Some(*cell) {
                continue;
            }
        }
        if limit != 0 && !out.is_empty() && out.len() >= limit {
            break;
        }
        let (min, max) = geohash::score_range(*cell);
        let (lo, hi) =
            z.score_range(ScoreBound { value: min, exclusive: false }, ScoreBound { value: max, exclusive: true });
        for (m, s) in z.iter_from(lo).take(hi - lo) {
            let [lon, lat] = geohash::decode_score(s);
            if let Some(dist) = shape.contains(lon, lat) {
                out.push(Point { lon, lat, dist, score: s, member: Bytes::copy_from_slice(m) });
                if limit != 0 && out.len() >= limit {
                    break;
                }
            }
        }
        last = Some(i);
    }
    out
}

/// What a search decided, before anything is stored.
enum Outcome {
    Reply(Reply),
    /// Store `points` (already sorted and cut) at the key; `None` points:
    /// the source key does not exist.
    Store {
        dst: Bytes,
        points: Option<Vec<Point>>,
        storedist: bool,
        conversion: f64,
    },
}

fn search_generic(ctx: &mut Ctx<'_>, args: &[Bytes], src: usize, flags: u8) -> CmdResult {
    // The source is read as Redis's lookupKeyRead reads it (keyspace hits
    // and misses), STORE forms included.
    let coord = coord_reply(ctx.core.profile().at_least(8, 0, 0));
    let outcome =
        ctx.with_read_lookups(true, |ctx| with_zset(ctx, &args[src], |z| plan_search(z, args, flags, coord)))??;
    let (dst, points, storedist, conversion) = match outcome {
        Outcome::Reply(r) => return Ok(r),
        Outcome::Store { dst, points, storedist, conversion } => (dst, points, storedist, conversion),
    };
    let search = flags & SEARCH != 0;
    let mut db = ctx.db();
    let points = points.unwrap_or_default();
    let returned = points.len();
    if returned > 0 {
        let mut out = ZSet::new();
        for p in points {
            let score = if storedist { p.dist / conversion } else { p.score };
            out.insert(own(&p.member), score);
        }
        db.set(&dst, Value::ZSet(out), false);
        db.notify(notify::ZSET, if search { "geosearchstore" } else { "georadiusstore" }, &dst);
    } else if db.remove(&dst).is_some() {
        db.notify(notify::GENERIC, "del", &dst);
    }
    Ok(Reply::Int(returned as i64))
}

/// Parses a search's arguments and runs it on `z` (the source key's set);
/// `coord` replies a coordinate.
fn plan_search(z: Option<&ZSet>, args: &[Bytes], flags: u8, coord: fn(f64) -> Reply) -> Result<Outcome, CmdError> {
    let mut storekey: Option<Bytes> = None;
    let mut storedist = false;
    let mut xy = [0.0f64; 2];
    let mut conversion = 1.0;
    let mut kind = ShapeKind::Radius(0.0);
    let base: usize;
    if flags & RADIUS_COORDS != 0 {
        base = 6;
        xy = long_lat(&args[2..4])?;
        let (r, c) = radius_arg(&args[4..6])?;
        kind = ShapeKind::Radius(r);
        conversion = c;
    } else if flags & RADIUS_MEMBER != 0 {
        base = 5;
        if let Some(z) = z {
            xy = member_pos(z, &args[2])
                .ok_or_else(|| CmdError::custom("ERR could not decode requested zset member"))?;
            let (r, c) = radius_arg(&args[3..5])?;
            kind = ShapeKind::Radius(r);
            conversion = c;
        }
    } else if flags & SEARCHSTORE != 0 {
        base = 3;
        storekey = Some(args[1].clone());
    } else {
        base = 2;
    }

    let (mut withdist, mut withhash, mut withcoord) = (false, false, false);
    let (mut frommember, mut fromloc, mut byradius, mut bybox) = (false, false, false, false);
    let mut sort = Sort::None;
    let mut any = false;
    let mut count: i64 = 0;
    let search = flags & SEARCH != 0;
    let rest = &args[base.min(args.len())..];
    let remaining = rest.len();
    let mut i = 0;
    while i < remaining {
        let arg = &rest[i];
        if eq(arg, "withdist") {
            withdist = true;
        } else if eq(arg, "withhash") {
            withhash = true;
        } else if eq(arg, "withcoord") {
            withcoord = true;
        } else if eq(arg, "any") {
            any = true;
        } else if eq(arg, "asc") {
            sort = Sort::Asc;
        } else if eq(arg, "desc") {
            sort = Sort::Desc;
        } else if eq(arg, "count") && i + 1 < remaining {
            count = int(&rest[i + 1])?;
            if count <= 0 {
                return Err(CmdError::custom("ERR COUNT must be > 0"));
            }
            i += 1;
        } else if (eq(arg, "store") || eq(arg, "storedist")) && i + 1 < remaining && flags & (NOSTORE | SEARCH) == 0 {
            storekey = Some(rest[i + 1].clone());
            storedist = eq(arg, "storedist");
            i += 1;
        } else if eq(arg, "storedist") && search && flags & SEARCHSTORE != 0 {
            storedist = true;
        } else if eq(arg, "frommember") && i + 1 < remaining && search && !fromloc {
            if let Some(z) = z {
                xy = member_pos(z, &rest[i + 1])
                    .ok_or_else(|| CmdError::custom("ERR could not decode requested zset member"))?;
            }
            frommember = true;
            i += 1;
        } else if eq(arg, "fromlonlat") && i + 2 < remaining && search && !frommember {
            xy = long_lat(&rest[i + 1..i + 3])?;
            fromloc = true;
            i += 2;
        } else if eq(arg, "byradius") && i + 2 < remaining && search && !bybox {
            let (r, c) = radius_arg(&rest[i + 1..i + 3])?;
            kind = ShapeKind::Radius(r);
            conversion = c;
            byradius = true;
            i += 2;
        } else if eq(arg, "bybox") && i + 3 < remaining && search && !byradius {
            let (w, h, c) = box_arg(&rest[i + 1..i + 4])?;
            kind = ShapeKind::Box { width: w, height: h };
            conversion = c;
            bybox = true;
            i += 3;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }

    if storekey.is_some() && (withdist || withhash || withcoord) {
        let what = if flags & SEARCHSTORE != 0 { "GEOSEARCHSTORE" } else { "STORE option in GEORADIUS" };
        return Err(CmdError::custom(format!(
            "ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        )));
    }
    if search && !(frommember || fromloc) {
        return Err(CmdError::echo("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for ", &args[0], ""));
    }
    if search && !(byradius || bybox) {
        return Err(CmdError::echo("ERR exactly one of BYRADIUS and BYBOX can be specified for ", &args[0], ""));
    }
    if any && count == 0 {
        return Err(CmdError::custom("ERR the ANY argument requires COUNT argument"));
    }

    let Some(z) = z else {
        return Ok(match storekey {
            Some(dst) => Outcome::Store { dst, points: None, storedist, conversion },
            None => Outcome::Reply(Reply::Array(Vec::new())),
        });
    };

    if count != 0 && sort == Sort::None && !any {
        sort = Sort::Asc;
    }
    let shape = Shape { xy, conversion, kind };
    let limit = if any { count as usize } else { 0 };
    let mut points = points_in_shape(z, &shape, limit);
    if points.is_empty() && storekey.is_none() {
        return Ok(Outcome::Reply(Reply::Array(Vec::new())));
    }
    let returned = if count == 0 { points.len() } else { points.len().min(count as usize) };
    match sort {
        Sort::Asc => points.sort_by(|a, b| a.dist.partial_cmp(&b.dist).unwrap_or(std::cmp::Ordering::Equal)),
        Sort::Desc => points.sort_by(|a, b| b.dist.partial_cmp(&a.dist).unwrap_or(std::cmp::Ordering::Equal)),
        Sort::None => {}
    }
    points.truncate(returned);

    let Some(dst) = storekey else {
        let options = usize::from(withdist) + usize::from(withhash) + usize::from(withcoord);
        let out = points
            .into_iter()
            .map(|p| {
                if options == 0 {
                    return Reply::Bulk(p.member);
                }
                let mut item = Vec::with_capacity(options + 1);
                item.push(Reply::Bulk(p.member));
                if withdist {
                    item.push(distance_reply(p.dist / conversion));
                }
                if withhash {
                    item.push(Reply::Int(p.score as i64));
                }
                if withcoord {
                    item.push(Reply::Array(vec![coord(p.lon), coord(p.lat)]));
                }
                Reply::Array(item)
            })
            .collect();
        return Ok(Outcome::Reply(Reply::Array(out)));
    };
    Ok(Outcome::Store { dst, points: Some(points), storedist, conversion })
}
